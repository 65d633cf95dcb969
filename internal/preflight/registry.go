package preflight

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	kauth "github.com/google/go-containerregistry/pkg/authn/kubernetes"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	corev1 "k8s.io/api/core/v1"

	apiv1 "github.com/stsdiag/stsdiag/api/v1"
	"github.com/stsdiag/stsdiag/internal/text"
)

// Registry answers whether a registry holds an image.
type Registry interface {
	// Head asks image's registry for its manifest, with the pull secrets the kubelet would use
	// (the pod's, its ServiceAccount's) and this machine's own credentials.
	Head(ctx context.Context, image string, pullSecrets []corev1.Secret) RegistryAnswer
}

// RegistryAnswer is what a registry said of an image.
type RegistryAnswer struct {
	Check apiv1.ImageCheck
	// Registry is the registry host, Pulled the image as the kubelet pulls it (the default
	// registry and tag spelled out).
	Registry, Pulled string
	// Digest is the manifest's digest when found; Answer the status and message otherwise.
	Digest, Answer string
}

// Remote asks registries with go-containerregistry: a HEAD of the manifest (a GET when the HEAD
// fails, for the registry's own error message), with the keychain the kubelet would use — the
// pull secrets, as its credential provider reads them (pkg/authn/kubernetes) — and the docker
// configuration of this machine (authn.DefaultKeychain: $DOCKER_CONFIG, ~/.docker/config.json),
// for CI runners that log in. A loopback or private registry is asked over plain HTTP, as
// go-containerregistry does.
type Remote struct {
	// Timeout bounds each image's questions.
	Timeout time.Duration
}

// Head implements Registry.
func (r Remote) Head(ctx context.Context, image string, pullSecrets []corev1.Secret) RegistryAnswer {
	ref, err := name.ParseReference(image)
	if err != nil {
		return RegistryAnswer{Check: apiv1.ImageNotFound, Pulled: image, Answer: "invalid image reference: " + err.Error()}
	}
	out := RegistryAnswer{Registry: ref.Context().RegistryStr(), Pulled: ref.Name()}
	if out.Registry == name.DefaultRegistry {
		// Docker Hub, as the kubelet and containerd name it.
		out.Registry = "docker.io"
		out.Pulled = "docker.io/" + strings.TrimPrefix(out.Pulled, name.DefaultRegistry+"/")
	}
	var keychain authn.Keychain = authn.DefaultKeychain
	if len(pullSecrets) > 0 {
		secrets, err := kauth.NewFromPullSecrets(ctx, pullSecrets)
		if err == nil {
			keychain = authn.NewMultiKeychain(secrets, authn.DefaultKeychain)
		}
	}
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 15 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(keychain)}
	desc, err := remote.Head(ref, opts...)
	if err == nil {
		out.Check, out.Digest = apiv1.ImageFound, desc.Digest.String()
		return out
	}
	var terr *transport.Error
	if errors.As(err, &terr) && terr.StatusCode >= 400 && terr.StatusCode < 500 {
		// A HEAD answer has no body: the GET says why (and some registries serve no HEAD).
		got, gerr := remote.Get(ref, opts...)
		if gerr == nil {
			out.Check, out.Digest = apiv1.ImageFound, got.Digest.String()
			return out
		}
		if errors.As(gerr, &terr) {
			err = gerr
		}
	}
	out.Check, out.Answer = classify(err)
	return out
}

// classify turns a registry error into a check and its answer in one line.
func classify(err error) (apiv1.ImageCheck, string) {
	var terr *transport.Error
	if !errors.As(err, &terr) {
		return apiv1.ImageUnreachable, text.OneLine(err.Error())
	}
	answer := fmt.Sprintf("%d %s", terr.StatusCode, http.StatusText(terr.StatusCode))
	var diag []string
	for _, d := range terr.Errors {
		diag = append(diag, fmt.Sprintf("%s: %s", d.Code, d.Message))
	}
	if len(diag) > 0 {
		answer += " (" + strings.Join(diag, "; ") + ")"
	}
	switch terr.StatusCode {
	case http.StatusNotFound:
		return apiv1.ImageNotFound, answer
	case http.StatusUnauthorized, http.StatusForbidden:
		return apiv1.ImageUnauthorized, answer
	}
	return apiv1.ImageUnreachable, answer
}
