package model

import (
	"maps"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/stuck"
)

// Preflight is preflight's answer: what render prints and the exit code is decided from.
type Preflight struct {
	OpenShift bool
	// StatefulSets in the input's order.
	StatefulSets []apiv1.PreflightStatefulSet
	// Findings, most severe first.
	Findings []stuck.Finding
	Warnings []string
	Server   *apiv1.ServerInfo
}

// Result is WouldNotFinish when a finding keeps a rollout from finishing by itself — wait's
// policy, stuck.Finding.Blocking: every error, an ImageStream tag not imported yet, OnDelete pods
// on an older revision —, else Clear.
func (p *Preflight) Result() apiv1.PreflightVerdict {
	for _, f := range p.Findings {
		if f.Blocking() {
			return apiv1.PreflightWouldNotFinish
		}
	}
	return apiv1.PreflightClear
}

// Count returns how many findings are at least as severe as min.
func (p *Preflight) Count(min apiv1.Severity) int {
	n := 0
	for _, f := range p.Findings {
		if f.Severity.Rank() >= min.Rank() {
			n++
		}
	}
	return n
}

// Public is the Preflight document.
func (p *Preflight) Public() *apiv1.Preflight {
	doc := apiv1.NewPreflight()
	doc.Result, doc.OpenShift = p.Result(), p.OpenShift
	for _, s := range p.StatefulSets {
		s.Pods = append([]apiv1.PreflightPod{}, s.Pods...)
		s.Images = append([]apiv1.PreflightImage{}, s.Images...)
		doc.StatefulSets = append(doc.StatefulSets, s)
	}
	doc.Findings = PublicFindings(p.Findings)
	doc.Warnings = append([]string(nil), p.Warnings...)
	if p.Server != nil {
		server := *p.Server
		server.AssumedFeatureGates = maps.Clone(p.Server.AssumedFeatureGates)
		doc.Server = &server
	}
	return doc
}
