"""Unit tests of train_ddp.py's checkpoint protocol, without torch or a cluster.

    python3 -m unittest discover -s docs/examples -p 'test_*.py'
"""

import json
import os
import re
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_ddp as t  # noqa: E402


class RequestFile(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.file = Path(self.dir.name) / "checkpoint-requested"

    def tearDown(self):
        self.dir.cleanup()

    def test_missing_or_empty_file_is_no_request(self):
        self.assertIsNone(t.checkpoint_requested(self.file))
        self.file.write_text("")
        self.assertIsNone(t.checkpoint_requested(self.file))
        self.file.write_text("\n")
        self.assertIsNone(t.checkpoint_requested(self.file))

    def test_annotation_value_is_the_request(self):
        self.file.write_text("2024-05-01T12:00:00Z")
        self.assertEqual(t.checkpoint_requested(self.file), "2024-05-01T12:00:00Z")

    def test_env_names_the_file(self):
        self.file.write_text("2024-05-01T12:00:00Z")
        with mock.patch.dict(os.environ, {"KUBETRAIN_CHECKPOINT_FILE": str(self.file)}):
            self.assertEqual(t.request_file(), self.file)
            self.assertEqual(t.checkpoint_requested(), "2024-05-01T12:00:00Z")
        with mock.patch.dict(os.environ, {}, clear=True):
            self.assertEqual(t.request_file(), Path("/etc/kubetrain/checkpoint-requested"))

    def test_poll_reads_at_most_once_per_interval_and_latches(self):
        clock = [0.0]
        p = t.Preemption(interval=5.0, path=self.file, clock=lambda: clock[0])
        self.assertFalse(p.poll())
        self.file.write_text("2024-05-01T12:00:00Z")
        clock[0] = 1.0
        self.assertFalse(p.poll(), "not re-read before the interval")
        clock[0] = 5.0
        self.assertTrue(p.poll())
        self.file.write_text("")
        self.assertTrue(p.poll(), "a request stays requested")
        self.assertEqual(p.requested_at, "2024-05-01T12:00:00Z")


class Checkpoints(unittest.TestCase):
    def test_atomic_write_leaves_no_partial_file(self):
        with tempfile.TemporaryDirectory() as d:
            target = Path(d) / "ckpt" / "step-000000010.pt"

            def fails(p):
                p.write_text("half")
                raise IOError("killed")

            with self.assertRaises(IOError):
                t.atomic_write(target, fails)
            self.assertFalse(target.exists())
            self.assertIsNone(t.latest_checkpoint(target.parent), "a .tmp file is not a checkpoint")
            t.atomic_write(target, lambda p: p.write_text("full"))
            self.assertEqual(target.read_text(), "full")

    def test_latest_checkpoint_is_the_highest_step(self):
        with tempfile.TemporaryDirectory() as d:
            d = Path(d)
            self.assertIsNone(t.latest_checkpoint(d / "none"))
            for step in (500, 1500, 1000):
                t.checkpoint_path(d, step).write_text(str(step))
            (d / "step-junk.pt").write_text("x")
            self.assertEqual(t.latest_checkpoint(d), t.checkpoint_path(d, 1500))


class Acknowledge(unittest.TestCase):
    def test_patches_own_pod_with_done_annotation(self):
        calls = []
        env = {"HOSTNAME": "llm-worker-0", "POD_NAMESPACE": "team-nlp"}
        with mock.patch.dict(os.environ, env, clear=True):
            req = t.acknowledge_request("2024-05-01T12:00:05Z", opener=lambda r, **kw: calls.append(r), api="https://api:6443")
        self.assertEqual(calls, [req])
        self.assertEqual(req.get_method(), "PATCH")
        self.assertEqual(req.full_url, "https://api:6443/api/v1/namespaces/team-nlp/pods/llm-worker-0")
        self.assertEqual(req.get_header("Content-type"), "application/merge-patch+json")
        body = json.loads(req.data)
        self.assertEqual(body, {"metadata": {"annotations": {"kubetrain.io/checkpoint-done": "2024-05-01T12:00:05Z"}}})

    def test_pod_name_env_wins_over_hostname(self):
        with mock.patch.dict(os.environ, {"HOSTNAME": "h", "POD_NAME": "p", "POD_NAMESPACE": "n"}, clear=True):
            self.assertEqual(t.pod_identity(), ("n", "p"))

    def test_unknown_pod_is_an_error(self):
        with mock.patch.dict(os.environ, {}, clear=True), mock.patch.object(t, "SA_DIR", Path("/nonexistent")):
            with self.assertRaises(RuntimeError):
                t.acknowledge_request("2024-05-01T12:00:05Z", opener=lambda r, **kw: None, api="https://api")

    def test_time_is_rfc3339_utc(self):
        s = t.now_rfc3339()
        self.assertRegex(s, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


class ProcessLayout(unittest.TestCase):
    def test_torchrun_values_per_process(self):
        env = {"RANK": "11", "LOCAL_RANK": "3", "WORLD_SIZE": "16"}
        self.assertEqual(t.process_layout(env), (11, 3, 16))

    def test_alone_is_rank_zero_of_one(self):
        self.assertEqual(t.process_layout({}), (0, 0, 1))


class ExampleManifest(unittest.TestCase):
    """trainingjob-ddp.yaml, read as text (no YAML library in the standard library)."""

    text = (Path(__file__).resolve().parent / "trainingjob-ddp.yaml").read_text()

    def test_one_process_per_gpu_of_the_pod(self):
        nproc = re.findall(r"--nproc-per-node=(\d+)", self.text)
        gpus = re.findall(r"nvidia\.com/gpu:\s*(\d+)", self.text)
        self.assertEqual(len(nproc), 1, nproc)
        self.assertEqual(nproc, gpus)
        self.assertIn('command: ["torchrun"', self.text)
        for flag in ("--nnodes=$(WORLD_SIZE)", "--node-rank=$(RANK)", "--master-addr=$(MASTER_ADDR)", "--master-port=$(MASTER_PORT)"):
            self.assertIn(flag, self.text)

    def test_the_checkpoint_claim_is_defined(self):
        docs = self.text.split("\n---\n")
        claims = re.findall(r"claimName:\s*([\w-]+)", self.text)
        self.assertTrue(claims)
        for claim in claims:
            self.assertTrue(
                any("kind: PersistentVolumeClaim" in d and re.search(rf"\n  name: {claim}\n", d) for d in docs),
                f"PersistentVolumeClaim {claim} is not defined",
            )
        self.assertIn("ReadWriteMany", self.text)


def torchrun_commands(text):
    """Every `command: ["torchrun", ...]` list in the text, as lists of strings."""
    return [
        re.findall(r'"([^"]*)"', m.group(1))
        for m in re.finditer(r'command:\s*\[("torchrun".*?)\]', text, re.S)
    ]


def flags(command):
    return dict(a[2:].split("=", 1) for a in command if a.startswith("--") and "=" in a)


class UserGuide(unittest.TestCase):
    """The torchrun commands docs/user-guide.md shows are the example manifest's."""

    here = Path(__file__).resolve().parent
    guide = (here.parent / "user-guide.md").read_text()
    example = torchrun_commands((here / "trainingjob-ddp.yaml").read_text())

    def test_the_example_has_one_command(self):
        self.assertEqual(len(self.example), 1, self.example)

    def test_the_guides_example_command_is_the_manifests(self):
        self.assertIn(self.example[0], torchrun_commands(self.guide))

    def test_every_command_of_the_guide_ranks_nodes_as_the_example(self):
        # NODE_RANK is shared by two replicas on one node: torchrun would wait forever for
        # the node rank that no replica takes.
        commands = torchrun_commands(self.guide)
        self.assertGreaterEqual(len(commands), 2, commands)
        want = flags(self.example[0])
        for command in commands:
            got = flags(command)
            for flag in ("nnodes", "node-rank", "master-addr", "master-port"):
                self.assertEqual(got.get(flag), want[flag], f"--{flag} in {command}")
        self.assertNotRegex(self.guide, r"--node-rank[= ]\$\(?NODE_RANK")


if __name__ == "__main__":
    unittest.main()
