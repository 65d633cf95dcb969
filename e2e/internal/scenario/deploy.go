package scenario

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
)

// WatchManifests are the files of deploy/ that `watch --fix` runs with, relative to the
// repository root. The Deployment is left out: a simulated node cannot run its container.
var WatchManifests = []string{
	"deploy/watch/namespace.yaml", "deploy/watch/serviceaccount.yaml", "deploy/watch/rbac-report.yaml",
	"deploy/watch/rbac-leader.yaml", "deploy/watch/rbac-metrics.yaml", "deploy/watch-fix/rbac-fix.yaml",
}

// ApplyManifests creates the Namespaces, ServiceAccounts and RBAC objects of multi-document
// YAML files.
func ApplyManifests(ctx context.Context, cs kubernetes.Interface, root string, paths ...string) error {
	for _, path := range paths {
		data, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			return err
		}
		for _, doc := range bytes.Split(data, []byte("\n---\n")) {
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			switch o := obj.(type) {
			case *corev1.Namespace:
				if _, getErr := cs.CoreV1().Namespaces().Get(ctx, o.Name, metav1.GetOptions{}); getErr == nil {
					continue // applied by another test already
				}
				err = Namespace(ctx, cs, o.Name)
			case *corev1.ServiceAccount:
				_, err = cs.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
			case *rbacv1.ClusterRole:
				_, err = cs.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
			case *rbacv1.ClusterRoleBinding:
				_, err = cs.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
			case *rbacv1.Role:
				_, err = cs.RbacV1().Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
			case *rbacv1.RoleBinding:
				_, err = cs.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
			default:
				err = fmt.Errorf("unexpected %T", obj)
			}
			if err != nil && !apierrors.IsAlreadyExists(err) { // like kubectl apply: present is fine
				return fmt.Errorf("%s: %w", path, err)
			}
		}
	}
	return nil
}

// ServiceAccountToken returns a token of a ServiceAccount.
func ServiceAccountToken(ctx context.Context, cs kubernetes.Interface, namespace, name string) (string, error) {
	tok, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	return tok.Status.Token, nil
}

// ServiceAccountWithClusterRole creates a ServiceAccount and binds a ClusterRole to it
// (ClusterRoleBinding of the same name); present objects are kept.
func ServiceAccountWithClusterRole(ctx context.Context, cs kubernetes.Interface, namespace, name, clusterRole string) error {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	if _, err := cs.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if clusterRole == "" {
		return nil
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: namespace}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}
