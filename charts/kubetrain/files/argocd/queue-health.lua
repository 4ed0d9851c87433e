-- Argo CD health of a kubetrain Queue (kubetrain.io/v1alpha1): Healthy when Ready,
-- Degraded when not (for example its VirtualCluster does not exist), Suspended while held
-- (spec.stopPolicy, its own or a parent's: Ready=False, Held or HeldAndDraining),
-- Progressing before the operator has written a status for the current spec or while a
-- deleted queue, or its deleted VirtualCluster, waits for its jobs. Lua 5.1 (Argo CD runs gopher-lua); tested by e2e/tests/argocd_health.rs.
local function condition(status, type_)
  if status.conditions == nil then
    return nil
  end
  for _, c in ipairs(status.conditions) do
    if c.type == type_ then
      return c
    end
  end
  return nil
end

local hs = {}
local status = obj.status
if status == nil or status.conditions == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the kubetrain operator to report the queue"
  return hs
end
local generation = obj.metadata.generation
if generation ~= nil and status.observedGeneration ~= nil and status.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to observe the latest spec"
  return hs
end
local terminating = condition(status, "Terminating")
if terminating ~= nil and terminating.status == "True" then
  hs.status = "Progressing"
  hs.message = terminating.message or "Waiting for the queue's jobs to finish"
  return hs
end
local ready = condition(status, "Ready")
if ready == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the kubetrain operator to report the queue"
elseif ready.reason == "Held" or ready.reason == "HeldAndDraining" then
  -- Held on purpose by an admin: nothing to repair.
  hs.status = "Suspended"
  hs.message = ready.message or "Held by its stopPolicy"
elseif ready.reason == "VirtualClusterTerminating" then
  -- Its VirtualCluster is being deleted and waits for its jobs: nothing to repair here.
  hs.status = "Progressing"
  hs.message = ready.message or "Waiting for the VirtualCluster's jobs to finish"
elseif ready.status == "True" then
  hs.status = "Healthy"
  hs.message = string.format("%d pending, %d running, %g GPUs in use (%g bonus)",
    status.pending or 0, status.running or 0, status.gpusInUse or 0, status.bonusGpus or 0)
else
  hs.status = "Degraded"
  hs.message = ready.message or ready.reason or "Not ready"
end
return hs
