-- Argo CD health of a kubetrain TrainingJob (kubetrain.io/v1alpha1).
-- Like a batch/v1 Job: Progressing while it waits or runs, Healthy once it succeeded,
-- Degraded when it failed or can never run as written, Suspended while spec.suspend or its
-- held queue (Admitted=False, QueueHeld) holds it.
-- Lua 5.1 (Argo CD runs gopher-lua); tested by e2e/tests/argocd_health.rs.
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
if status == nil or status.phase == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the kubetrain operator to pick the job up"
  return hs
end
local generation = obj.metadata.generation
if generation ~= nil and status.observedGeneration ~= nil and status.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to observe the latest spec"
  return hs
end
local message = status.message or status.phase

local valid = condition(status, "Valid")
if valid ~= nil and valid.status == "False" and status.phase == "Pending" then
  hs.status = "Degraded"
  hs.message = valid.message or message
  return hs
end

local phase = status.phase
if phase == "Succeeded" then
  hs.status = "Healthy"
elseif phase == "Failed" then
  hs.status = "Degraded"
elseif phase == "Suspended" then
  hs.status = "Suspended"
elseif phase == "Queued" then
  local admitted = condition(status, "Admitted")
  -- NeverFits and ExceedsLimit: no wait starts it; the job or the cluster must change.
  if admitted ~= nil and admitted.status == "False"
      and (admitted.reason == "NeverFits" or admitted.reason == "ExceedsLimit") then
    hs.status = "Degraded"
    message = admitted.message or message
  elseif admitted ~= nil and admitted.status == "False" and admitted.reason == "QueueHeld" then
    hs.status = "Suspended"
    message = admitted.message or message
  else
    hs.status = "Progressing"
  end
else
  -- Pending, Starting, Running, Preempting, Retrying: the operator is working on it.
  hs.status = "Progressing"
end
hs.message = message
return hs
