package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"sigs.k8s.io/karpenter/kwok/apis/v1alpha1"
	kwok "sigs.k8s.io/karpenter/kwok/cloudprovider"
	"sigs.k8s.io/karpenter/kwok/options"
	v1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
)

// p3.16xlarge is cheaper in us-west-2 than in us-east-1 here, so the cheapest-first choice is us-west-2.
const types = `[{"name": "p3.16xlarge", "architecture": "amd64", "operatingSystems": ["linux"],
  "resources": {"cpu": "64", "memory": "488Gi", "nvidia.com/gpu": "8"},
  "offerings": [
    {"Price": 24.0, "Available": true, "Requirements": [
      {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
      {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-west-2a"]}]},
    {"Price": 25.0, "Available": true, "Requirements": [
      {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
      {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]}]}]}]`

func provider(t *testing.T, limits string) *limited {
	t.Helper()
	path := filepath.Join(t.TempDir(), "types.json")
	if err := os.WriteFile(path, []byte(types), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := options.ToContext(context.Background(), &options.Options{InstanceTypesFilePath: path})
	its, err := kwok.ConstructInstanceTypes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := parseLimits(limits)
	if err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientBuilder().WithScheme(scheme.Scheme).
		WithObjects(&v1alpha1.KWOKNodeClass{ObjectMeta: metav1.ObjectMeta{Name: "lab"}}).Build()
	return &limited{
		CloudProvider: kwok.NewCloudProvider(ctx, kube, its), instanceTypes: its, limits: parsed, ttl: time.Minute,
		running: map[key]int{}, launched: map[string]key{}, unavailable: map[offeringKey]time.Time{},
	}
}

func claim(zones ...string) *v1.NodeClaim {
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim"},
		Spec: v1.NodeClaimSpec{
			NodeClassRef: &v1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "lab"},
			Requirements: []v1.NodeSelectorRequirementWithMinValues{
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"p3.16xlarge"}},
				{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: zones},
			},
		},
	}
}

func zoneOf(t *testing.T, nc *v1.NodeClaim) string {
	t.Helper()
	return nc.Labels[corev1.LabelTopologyZone]
}

func TestTheCheapestOfferingWithRoomLaunchesAndAFullOneIsCachedUnavailable(t *testing.T) {
	p := provider(t, "us-west-2/p3.16xlarge=1")
	ctx := context.Background()
	first, err := p.Create(ctx, claim("us-west-2a", "us-east-1a"))
	if err != nil || zoneOf(t, first) != "us-west-2a" {
		t.Fatalf("first launch: %v in %q, want us-west-2a", err, zoneOf(t, first))
	}
	second, err := p.Create(ctx, claim("us-west-2a", "us-east-1a"))
	if err != nil || zoneOf(t, second) != "us-east-1a" {
		t.Fatalf("second launch: %v in %q, want us-east-1a (us-west-2 is full)", err, zoneOf(t, second))
	}
	its, _ := p.GetInstanceTypes(ctx, nil)
	for _, o := range its[0].Offerings {
		if want := o.Zone() != "us-west-2a"; o.Available != want {
			t.Errorf("offering %s available=%v, want %v", o.Zone(), o.Available, want)
		}
	}
	if _, err := p.Create(ctx, claim("us-west-2a")); !cloudprovider.IsInsufficientCapacityError(err) {
		t.Fatalf("a claim for us-west-2 only: %v, want InsufficientCapacityError", err)
	}
	// a deleted instance makes room again once the cache entry expires
	if err := p.Delete(ctx, first); err != nil && !cloudprovider.IsNodeClaimNotFoundError(err) {
		t.Fatal(err)
	}
	p.unavailable = map[offeringKey]time.Time{}
	if third, err := p.Create(ctx, claim("us-west-2a")); err != nil || zoneOf(t, third) != "us-west-2a" {
		t.Fatalf("after a delete: %v, want a launch in us-west-2a", err)
	}
}

func TestLimitsInTheMotoServersSyntax(t *testing.T) {
	got, err := parseLimits("us-west-2/p3.16xlarge=2, us-west-2/p4d.24xlarge=0")
	if err != nil || got[key{"us-west-2", "p3.16xlarge"}] != 2 || got[key{"us-west-2", "p4d.24xlarge"}] != 0 || len(got) != 2 {
		t.Fatalf("parseLimits: %v %v", got, err)
	}
	for _, bad := range []string{"us-west-2=2", "us-west-2/p3.16xlarge", "us-west-2/p3.16xlarge=-1", "/p3=1"} {
		if _, err := parseLimits(bad); err == nil {
			t.Errorf("parseLimits(%q): no error", bad)
		}
	}
}
