-- Argo CD health of a kubetrain VirtualCluster (kubetrain.io/v1alpha1): Healthy when
-- Ready, Degraded when not Ready or OverCommitted (its guarantee cannot be honoured with
-- the GPUs the cluster has), Progressing before the operator has written a status for the
-- current spec and while, deleted, it waits for its jobs (Ready=False, Terminating). Lua 5.1 (Argo CD runs gopher-lua); tested by e2e/tests/argocd_health.rs.
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
  hs.message = "Waiting for the kubetrain operator to report the virtual cluster"
  return hs
end
local generation = obj.metadata.generation
if generation ~= nil and status.observedGeneration ~= nil and status.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to observe the latest spec"
  return hs
end
local over = condition(status, "OverCommitted")
if over ~= nil and over.status == "True" then
  hs.status = "Degraded"
  hs.message = over.message or "Guarantees exceed the cluster's capacity"
  return hs
end
local ready = condition(status, "Ready")
if ready == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the kubetrain operator to report the virtual cluster"
elseif ready.reason == "Terminating" then
  -- Deleted, waiting for its queues' running jobs (its finalizer): it goes by itself.
  hs.status = "Progressing"
  hs.message = ready.message or "Waiting for the virtual cluster's jobs to finish"
elseif ready.status == "True" then
  hs.status = "Healthy"
  hs.message = string.format("%g of %d guaranteed GPUs in use, %g bonus, %g lent",
    status.inUseGpus or 0, status.guaranteedGpus or 0, status.bonusGpus or 0, status.lentGpus or 0)
else
  hs.status = "Degraded"
  hs.message = ready.message or ready.reason or "Not ready"
end
return hs
