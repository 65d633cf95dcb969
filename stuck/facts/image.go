package facts

import (
	"time"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
)

// The facts below are what the rules establish about each finding, in types: stuck.Finding.Facts
// holds one of them, and stuck.Diagnose words it (message, short, remedy). The container, its
// image and the resolved image are the finding's own fields.

// LookupOff are the facts of ImageLookupDisabled.
type LookupOff struct {
	Init   bool
	Stream string
	// PulledAs is what the runtime pulls instead (docker.io/...).
	PulledAs string
}

// TagMissing are the facts of ImageStreamTagNotFound.
type TagMissing struct {
	Init        bool
	Stream, Tag string
	// NoImageID: the tag's latest event has no image ID.
	NoImageID bool
	// Writes is the tag pull spec admission writes anyway, "" when none.
	Writes string
	// Registry: the image is already that pull spec, the stream's internal-registry tag.
	Registry bool
}

// NotRewritten are the facts of UnresolvedImageReference.
type NotRewritten struct {
	Init        bool
	Stream, Tag string
	// PulledAs is what pods pull instead.
	PulledAs string
	// Cause is one of the Cause constants; Revision the ControllerRevision that set the image
	// ("" when no history tells), created at RevisionCreated; Later is when the stream or tag
	// that came after it was created.
	Cause           string
	Revision        string
	RevisionCreated time.Time
	Later           time.Time
	// Digest: the resolved image is a digest, not a tag.
	Digest bool
	// Triggered: an image trigger governs the container, so the repair is the trigger's.
	Triggered bool
	// Unpinned: the image is the stream's internal-registry tag (<repository>:<tag>), what
	// admission writes while the tag has no image, not a local name.
	Unpinned bool
}

// NeverResolved are the facts of ImageResolutionSkipped (the finding's reason says why).
type NeverResolved struct {
	Init        bool
	Stream, Tag string
	// Host is the single segment parsed as a registry host (SkipNameParsedAsRegistry).
	Host string
	// OwnerKind and OwnerName are the StatefulSet's controller owner (SkipControllerOwned).
	OwnerKind, OwnerName string
	// RunLevel is the namespace's run level, "" when the namespace is excluded by name
	// (SkipExcludedNamespace).
	RunLevel string
	// Target is the full pull spec to write, "" when unknown.
	Target string
}

// TriggerBroken are the facts of ImageTriggerInvalid (the finding's reason says why).
type TriggerBroken struct {
	// Index is the trigger's index in the annotation; nil when the whole annotation is invalid.
	Index *int
	// ParseError is the decoder's error (TriggerInvalidJSON, TriggerPausedNotBoolean,
	// TriggerInvalidType).
	ParseError string
	// FieldPath is the trigger's (or the duplicated) fieldPath.
	FieldPath                          string
	FromKind, FromAPIVersion, FromName string
	// StreamNamespace, Stream and Tag name the ImageStreamTag followed.
	StreamNamespace, Stream, Tag string
}

// TriggerBehind are the facts of ImageTriggerStale.
type TriggerBehind struct {
	// From is the ImageStreamTag followed, <namespace>/<stream>:<tag>.
	From string
	// Want is what the trigger controller writes; Suffix, when the internal registry host is
	// unknown, is only its end ("/<ns>/<name>@<image>").
	Want, Suffix string
	// Valid: Want is an image reference that can be patched in.
	Valid bool
	// Digest: Want is a digest, not a tag.
	Digest bool
}

// Code is the finding code the facts explain.
func (LookupOff) Code() apiv1.Code { return apiv1.ImageLookupDisabled }

// Code is the finding code the facts explain.
func (TagMissing) Code() apiv1.Code { return apiv1.ImageStreamTagNotFound }

// Code is the finding code the facts explain.
func (NotRewritten) Code() apiv1.Code { return apiv1.UnresolvedImageReference }

// Code is the finding code the facts explain.
func (NeverResolved) Code() apiv1.Code { return apiv1.ImageResolutionSkipped }

// Code is the finding code the facts explain.
func (TriggerBroken) Code() apiv1.Code { return apiv1.ImageTriggerInvalid }

// Code is the finding code the facts explain.
func (TriggerBehind) Code() apiv1.Code { return apiv1.ImageTriggerStale }

// Why admission never resolves a name (details.reason of ImageResolutionSkipped).
const (
	SkipControllerOwned      = "ControllerOwned"
	SkipExcludedNamespace    = "ExcludedNamespace"
	SkipNameParsedAsRegistry = "NameParsedAsRegistry"
)

// Causes of an UnresolvedImageReference (details.cause). Admission resolves an image only when
// the object is created or that image changes (imagereferencemutators/pods.go:221-273@ALG), so a
// template admitted before its stream or tag existed stays unresolved, and re-applying the same
// manifest changes nothing.
const (
	// CauseStreamCreatedAfterTemplate: the ImageStream is newer than the revision that set the image.
	CauseStreamCreatedAfterTemplate = "StreamCreatedAfterTemplate"
	// CauseTagCreatedAfterTemplate: the tag's oldest image is newer than that revision.
	CauseTagCreatedAfterTemplate = "TagCreatedAfterTemplate"
	// CauseUnknown: stream and tag predate it; admission should have resolved it.
	CauseUnknown = "Unknown"
)

// Why a trigger is invalid (details.reason of ImageTriggerInvalid).
const (
	TriggerInvalidJSON        = "InvalidJSON"
	TriggerPausedNotBoolean   = "PausedNotBoolean"
	TriggerInvalidType        = "InvalidType"
	TriggerDuplicateFieldPath = "DuplicateFieldPath"
	TriggerFieldPathNotInSpec = "FieldPathNotInTemplate"
	TriggerInvalidFieldPath   = "InvalidFieldPath"
	TriggerNoSuchContainer    = "NoSuchContainer"
	TriggerUnsupportedFrom    = "UnsupportedFrom"
	TriggerInvalidTagName     = "InvalidTagName"
	TriggerStreamNotFound     = "StreamNotFound"
	TriggerTagNotFound        = "TagNotFound"
)
