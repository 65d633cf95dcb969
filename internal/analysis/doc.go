// Package analysis gates canary steps on the application's own Prometheus metrics, reading
// Argo Rollouts' AnalysisTemplate as its file format and following Argo's rules for
// measurements, conditions and limits. The rules are ported from argo-rollouts at commit
// 9f8d111d8f8e3e88b6d7f8bbdf62fd3cd863ef9d (v1.10.0-rc1-70); each file names its sources.
//
// # What it reads
//
// One AnalysisTemplate or ClusterAnalysisTemplate (argoproj.io/v1alpha1), YAML or JSON, decoded
// strictly: spec.args with plain values (a value-less arg must be given to Bind), and
// spec.metrics with the prometheus provider (address, query, timeout, insecure, headers),
// interval, initialDelay, count, successCondition, failureCondition, failureLimit,
// inconclusiveLimit, consecutiveErrorLimit and consecutiveSuccessLimit. {{args.NAME}} is
// substituted everywhere in a metric, as in Argo.
//
// # What it refuses
//
// With an *UnsupportedError, before anything runs: any provider but prometheus (web, job,
// datadog, newRelic, wavefront, kayenta, cloudWatch, graphite, influxdb, skywalking, plugin);
// prometheus authentication and rangeQuery; args valueFrom (secretKeyRef, fieldRef);
// spec.dryRun, spec.measurementRetention and spec.templates; another kind or apiVersion.
// Unknown fields are errors too.
//
// # Conditions
//
// Conditions are expr (github.com/expr-lang/expr) expressions over `result` with Argo's helpers
// asInt, asFloat, isNaN, isInf, isNil and default. A scalar result is a float64, a vector (or
// matrix) a []float64, empty when the query returns no data (so `result[0]` is then an
// evaluation error, an Error measurement). A measurement is Successful when its success
// condition holds (or none is given and the failure condition does not hold), Failed when its
// failure condition holds (or only a success condition is given and it does not hold),
// Inconclusive when both are given and neither holds; with no condition it is Successful.
//
// # Phases
//
// Argo's AnalysisPhase names, for a measurement, a metric and an analysis:
//   - Pending: no measurement taken yet;
//   - Running: measuring (an indefinite metric stays Running until stopped);
//   - Successful: consecutiveSuccessLimit (if set) was reached, or the count was reached
//     within the limits, or the analysis was stopped with no limit breached;
//   - Failed: more Failed measurements than failureLimit (default 0; -1 turns it off), or the
//     count was reached with consecutiveSuccessLimit unmet and failureLimit off;
//   - Inconclusive: more Inconclusive measurements than inconclusiveLimit (default 0), or the
//     count was reached with consecutiveSuccessLimit unmet and failureLimit on;
//   - Error: more Errors in a row than consecutiveErrorLimit (default 4). A query that fails
//     or a condition that cannot be evaluated is an Error measurement, retried after 10s; it
//     does not count toward count.
//
// An analysis is Running until every metric is completed, then the worst of its metrics in the
// order Successful, Running, Pending, Inconclusive, Error, Failed. A metric ending Failed,
// Error or Inconclusive stops the others.
package analysis
