-- Argo CD health check for apps/StatefulSet that knows when a rollout will never finish.
-- stsdiag watch sets status.conditions[type=Stalled]=True (reason = the finding's code) on a
-- StatefulSet whose error finding held for --hold; Argo CD then shows Degraded with the
-- reason and the remedy instead of Progressing forever (argo-cd#6527).
-- Everything else follows Argo CD's built-in StatefulSet rules (gitops-engine
-- pkg/health/health_statefulset.go), in the same order and with the same messages.
-- Uses only the libraries Argo CD opens for health scripts (base, table, package).
local hs = {}
local spec = obj.spec or {}
local status = obj.status or {}
local generation = (obj.metadata and obj.metadata.generation) or 0
local observed = status.observedGeneration or 0

if observed == 0 or generation > observed then
  hs.status = "Progressing"
  hs.message = "Waiting for statefulset spec update to be observed..."
  return hs
end

if status.conditions ~= nil then
  for _, c in ipairs(status.conditions) do
    if c.type == "Stalled" and c.status == "True" then
      hs.status = "Degraded"
      hs.message = (c.reason or "Stalled") .. ": " .. (c.message or "")
      return hs
    end
  end
end

local ready = status.readyReplicas or 0
local updated = status.updatedReplicas or 0
if spec.replicas ~= nil and ready < spec.replicas then
  hs.status = "Progressing"
  hs.message = "Waiting for " .. tostring(spec.replicas - ready) .. " pods to be ready..."
  return hs
end

local strategy = spec.updateStrategy or {}
if strategy.type == "RollingUpdate" and strategy.rollingUpdate ~= nil then
  local partition = strategy.rollingUpdate.partition
  if spec.replicas ~= nil and partition ~= nil and updated < spec.replicas - partition then
    hs.status = "Progressing"
    hs.message = "Waiting for partitioned roll out to finish: " .. tostring(updated) .. " out of " ..
      tostring(spec.replicas - partition) .. " new pods have been updated..."
    return hs
  end
  hs.status = "Healthy"
  hs.message = "partitioned roll out complete: " .. tostring(updated) .. " new pods have been updated..."
  return hs
end

if strategy.type == "OnDelete" then
  hs.status = "Healthy"
  hs.message = "statefulset has " .. tostring(ready) .. " ready pods"
  return hs
end

if status.updateRevision ~= status.currentRevision then
  hs.status = "Progressing"
  hs.message = "waiting for statefulset rolling update to complete " .. tostring(updated) ..
    " pods at revision " .. tostring(status.updateRevision) .. "..."
  return hs
end

hs.status = "Healthy"
hs.message = "statefulset rolling update complete " .. tostring(status.currentReplicas or 0) ..
  " pods at revision " .. tostring(status.currentRevision) .. "..."
return hs
