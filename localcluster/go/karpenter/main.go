// Karpenter v1.15.0 with its kwok cloud provider, as sigs.k8s.io/karpenter/kwok/main.go runs it, with one change:
// EC2's capacity can run out, as our moto server's does (localcluster/aws_server.py). CAPACITY_LIMITS holds
// REGION/INSTANCE-TYPE=N items (comma or space separated, the moto server's --limit syntax): a region holds at most
// N running instances of that type. Create then does what Karpenter's AWS provider does with CreateFleet: it tries
// the claim's (type, zone) offerings cheapest first, skips those with no room, remembers each as unavailable for
// UNAVAILABLE_OFFERINGS_TTL (default 3m, the AWS provider's ICE cache) so GetInstanceTypes reports it so, and
// returns Karpenter's InsufficientCapacityError when none has room. Built by localcluster/build-tools.sh.
package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/samber/lo"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	kwok "sigs.k8s.io/karpenter/kwok/cloudprovider"
	v1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/metrics"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/overlay"
	"sigs.k8s.io/karpenter/pkg/controllers"
	"sigs.k8s.io/karpenter/pkg/controllers/node/health"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/operator"
	"sigs.k8s.io/karpenter/pkg/scheduling"
)

type key struct{ region, instanceType string }

type offeringKey struct{ instanceType, zone, capacityType string }

// limited is the kwok provider with finite capacity per region and instance type.
type limited struct {
	*kwok.CloudProvider
	instanceTypes []*cloudprovider.InstanceType
	limits        map[key]int
	ttl           time.Duration

	mu          sync.Mutex
	running     map[key]int
	launched    map[string]key // provider ID -> what it counts against
	unavailable map[offeringKey]time.Time
}

func regionOf(zone string) string { return strings.TrimRight(zone, "abcdefghijklmnopqrstuvwxyz") }

func parseLimits(text string) (map[key]int, error) {
	limits := map[key]int{}
	for _, item := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' }) {
		k, v, ok := strings.Cut(item, "=")
		region, itype, ok2 := strings.Cut(k, "/")
		n, err := strconv.Atoi(v)
		if !ok || !ok2 || region == "" || itype == "" || err != nil || n < 0 {
			return nil, fmt.Errorf("CAPACITY_LIMITS item %q: expected REGION/INSTANCE-TYPE=N, e.g. us-west-2/p3.16xlarge=2", item)
		}
		limits[key{region, itype}] = n
	}
	return limits, nil
}

func (l *limited) isUnavailable(k offeringKey, now time.Time) bool {
	until, ok := l.unavailable[k]
	return ok && now.Before(until)
}

// GetInstanceTypes reports the offerings that failed to launch as unavailable until their cache entry expires.
func (l *limited) GetInstanceTypes(ctx context.Context, np *v1.NodePool) ([]*cloudprovider.InstanceType, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	return lo.Map(l.instanceTypes, func(it *cloudprovider.InstanceType, _ int) *cloudprovider.InstanceType {
		cp := *it
		cp.Offerings = lo.Map(it.Offerings, func(o *cloudprovider.Offering, _ int) *cloudprovider.Offering {
			oc := *o
			oc.Available = o.Available && !l.isUnavailable(offeringKey{it.Name, o.Zone(), o.CapacityType()}, now)
			return &oc
		})
		return &cp
	}), nil
}

type candidate struct {
	it       *cloudprovider.InstanceType
	offering *cloudprovider.Offering
}

func (l *limited) Create(ctx context.Context, nc *v1.NodeClaim) (*v1.NodeClaim, error) {
	reqs := scheduling.NewNodeSelectorRequirementsWithMinValues(nc.Spec.Requirements...)
	names := reqs.Get(corev1.LabelInstanceTypeStable)
	l.mu.Lock()
	now := time.Now()
	var cands []candidate
	for _, it := range l.instanceTypes {
		if !names.Has(it.Name) {
			continue
		}
		for _, o := range it.Offerings.Available().Compatible(reqs) {
			if !l.isUnavailable(offeringKey{it.Name, o.Zone(), o.CapacityType()}, now) {
				cands = append(cands, candidate{it, o})
			}
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].offering.Price < cands[j].offering.Price })
	var chosen *candidate
	for i, c := range cands {
		k := key{regionOf(c.offering.Zone()), c.it.Name}
		if limit, ok := l.limits[k]; ok && l.running[k] >= limit {
			// InsufficientInstanceCapacity for this pool: cached as the AWS provider caches it.
			l.unavailable[offeringKey{c.it.Name, c.offering.Zone(), c.offering.CapacityType()}] = now.Add(l.ttl)
			log.FromContext(ctx).Info("insufficient capacity", "instance-type", c.it.Name, "zone", c.offering.Zone())
			continue
		}
		chosen = &cands[i]
		l.running[k]++
		break
	}
	l.mu.Unlock()
	if chosen == nil {
		return nil, cloudprovider.NewInsufficientCapacityError(fmt.Errorf("all requested instance types were unavailable during launch"))
	}
	// The kwok provider picks the cheapest compatible offering: narrow the claim to the one that had room.
	narrowed := nc.DeepCopy()
	narrowed.Spec.Requirements = append(lo.Filter(narrowed.Spec.Requirements, func(r v1.NodeSelectorRequirementWithMinValues, _ int) bool {
		return r.Key != corev1.LabelInstanceTypeStable && r.Key != corev1.LabelTopologyZone && r.Key != v1.CapacityTypeLabelKey
	}),
		v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{chosen.it.Name}},
		v1.NodeSelectorRequirementWithMinValues{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{chosen.offering.Zone()}},
		v1.NodeSelectorRequirementWithMinValues{Key: v1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{chosen.offering.CapacityType()}},
	)
	k := key{regionOf(chosen.offering.Zone()), chosen.it.Name}
	created, err := l.CloudProvider.Create(ctx, narrowed)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.running[k]--
		return nil, err
	}
	l.launched[created.Status.ProviderID] = k
	return created, nil
}

func (l *limited) Delete(ctx context.Context, nc *v1.NodeClaim) error {
	err := l.CloudProvider.Delete(ctx, nc)
	if err == nil || cloudprovider.IsNodeClaimNotFoundError(err) {
		l.mu.Lock()
		if k, ok := l.launched[nc.Status.ProviderID]; ok {
			l.running[k]--
			delete(l.launched, nc.Status.ProviderID)
		}
		l.mu.Unlock()
	}
	return err
}

func main() {
	ctx, op := operator.NewOperator()
	instanceTypes, err := kwok.ConstructInstanceTypes(ctx)
	if err != nil {
		log.FromContext(ctx).Error(err, "failed constructing instance types")
		os.Exit(1)
	}
	limits, err := parseLimits(os.Getenv("CAPACITY_LIMITS"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ttl := 3 * time.Minute
	if v := os.Getenv("UNAVAILABLE_OFFERINGS_TTL"); v != "" {
		if ttl, err = time.ParseDuration(v); err != nil {
			fmt.Fprintf(os.Stderr, "UNAVAILABLE_OFFERINGS_TTL %q: expected a duration, e.g. 3m\n", v)
			os.Exit(2)
		}
	}
	base := kwok.NewCloudProvider(ctx, op.GetClient(), instanceTypes)
	var provider cloudprovider.CloudProvider = &limited{
		CloudProvider: base, instanceTypes: instanceTypes, limits: limits, ttl: ttl,
		running: map[key]int{}, launched: map[string]key{}, unavailable: map[offeringKey]time.Time{},
	}
	// The AWS provider's main decorates with metrics: karpenter_cloudprovider_duration_seconds_count{method=...}
	// counts the calls that would go to EC2.
	provider = metrics.Decorate(provider)
	cloudProvider := overlay.Decorate(provider, op.GetClient(), op.InstanceTypeStore)
	repairPolicyMatcher := lo.Must(health.NewRepairPolicyMatcher(ctx, cloudProvider))
	clusterState := state.NewCluster(op.Clock, op.GetClient(), cloudProvider, state.WithRepairPolicyMatcher(repairPolicyMatcher))
	op.
		WithControllers(ctx, controllers.NewControllers(
			ctx,
			op.Manager,
			op.Clock,
			op.GetClient(),
			op.EventRecorder,
			cloudProvider,
			provider,
			clusterState,
			op.InstanceTypeStore,
			op.PredictionStore,
		)...).Start(ctx)
}
