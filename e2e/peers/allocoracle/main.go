// allocoracle decides, per node, whether kube-scheduler's DRA plugin would let a pod's
// ResourceClaims be allocated there, with Kubernetes' own allocator:
// k8s.io/dynamic-resource-allocation/structured at the version pinned in go.mod, the
// variant (stable, incubating, experimental) NewAllocator picks for the feature gates,
// fed as the DynamicResources plugin feeds it (allocated state from every allocated
// claim and the in-flight allocations, admin-access results not counted, shared devices
// only with DRAConsumableCapacity; the pod's allocated claims restricted to their
// allocation's node selector).  Beside it, the pod's own node filters
// (NodeUnschedulable, TaintToleration, NodeAffinity) with k8s.io/component-helpers.
//
// It is the reference dra-doctor's lib/model/alloc is tested against
// (tests/fuzz/fuzz_alloc_diff.c, scripts/alloc-differential.py, bench/alloc-bench.sh).
//
//	allocoracle            one snapshot a line on stdin, one answer a line on stdout
//	allocoracle -bench N   each snapshot N times; prints ns per pod (all nodes filtered)
//
// A snapshot: {"name": "...", "gates": {"DRAConsumableCapacity": false, ...},
// "nodes": [Node], "slices": [ResourceSlice], "classes": [DeviceClass],
// "claims": [ResourceClaim], "inFlight": [ResourceClaim], "pod": Pod,
// "filterTimeoutSeconds": the scheduler's filter timeout (default 10)}, objects in
// their v1 JSON.  Claims hold every claim of the cluster (status.allocation when
// allocated); inFlight the claims whose allocation the scheduler holds but has not
// written; the pod's claims are found by name as the scheduler finds them
// (resourceClaimName, or status.resourceClaimStatuses for a template).  Gates default
// to the release's.
//
// An answer: {"name": ..., "status": "ok" | "unschedulable" | "error", "reason": the
// pod-level (PreFilter) message, "nodes": [{"node": name, "podFilter": "" or why the
// pod's own filters exclude the node, "status": "fit" | "unschedulable" | "error",
// "reason": ..., "allocations": [{"claim": ns/name, "devices": [{"request", "driver",
// "pool", "device", "adminAccess", "shared"}]}]}]}.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"sort"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
	corev1defaults "k8s.io/kubernetes/pkg/apis/core/v1"
	resourcev1defaults "k8s.io/kubernetes/pkg/apis/resource/v1"
	"k8s.io/utils/ptr"
)

// The API server's defaults (allocationMode ExactCount, count 1, a toleration's operator,
// ...): the snapshot holds objects as written, the scheduler sees them as stored.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := resourcev1defaults.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := corev1defaults.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

func (s *snapshot) setDefaults() {
	for _, o := range s.Nodes {
		scheme.Default(o)
	}
	for _, o := range s.Slices {
		scheme.Default(o)
	}
	for _, o := range s.Classes {
		scheme.Default(o)
	}
	for _, o := range s.Claims {
		scheme.Default(o)
	}
	for _, o := range s.InFlight {
		scheme.Default(o)
	}
	if s.Pod != nil {
		scheme.Default(s.Pod)
	}
}

// The release's defaults (pkg/features/kube_features.go of k8s.io/kubernetes v1.37.2) for
// every gate the DRA plugin reads.
var defaultGates = map[string]bool{
	"DRAAdminAccess":                     true,
	"DRAConsumableCapacity":              true,
	"DRADerivedAttributes":               false,
	"DRADeviceBindingConditions":         true,
	"DRADeviceCompatibilityGroups":       false,
	"DRADeviceTaints":                    true,
	"DRAFractionalCapacityRange":         true,
	"DRAListTypeAttributes":              false,
	"DRAOptionalNodeOperations":          false,
	"DRAPartitionableDevices":            true,
	"DRAPrioritizedList":                 true,
	"DRAResourceClaimDeviceStatus":       true,
	"DRASchedulerFilterTimeout":          true,
	"TaintTolerationComparisonOperators": false,
}

// The scheduler's default DynamicResourcesArgs.FilterTimeout and BindingTimeout.
const (
	filterTimeout  = 10 * time.Second
	bindingTimeout = 600 * time.Second
)

type snapshot struct {
	Name     string                       `json:"name"`
	Gates    map[string]bool              `json:"gates"`
	Nodes    []*v1.Node                   `json:"nodes"`
	Slices   []*resourceapi.ResourceSlice `json:"slices"`
	Classes  []*resourceapi.DeviceClass   `json:"classes"`
	Claims   []*resourceapi.ResourceClaim `json:"claims"`
	InFlight []*resourceapi.ResourceClaim `json:"inFlight"`
	Pod      *v1.Pod                      `json:"pod"`
	// FilterTimeoutSeconds replaces the scheduler's filter timeout (the differential
	// fuzzer keeps it short).
	FilterTimeoutSeconds float64 `json:"filterTimeoutSeconds"`
}

type device struct {
	Request     string `json:"request"`
	Driver      string `json:"driver"`
	Pool        string `json:"pool"`
	Device      string `json:"device"`
	AdminAccess bool   `json:"adminAccess,omitempty"`
	Shared      bool   `json:"shared,omitempty"`
}

type allocation struct {
	Claim   string   `json:"claim"`
	Devices []device `json:"devices"`
}

type nodeAnswer struct {
	Node        string       `json:"node"`
	PodFilter   string       `json:"podFilter"`
	Status      string       `json:"status"`
	Reason      string       `json:"reason,omitempty"`
	Allocations []allocation `json:"allocations,omitempty"`
}

type answer struct {
	Name   string       `json:"name"`
	Status string       `json:"status"`
	Reason string       `json:"reason,omitempty"`
	Nodes  []nodeAnswer `json:"nodes,omitempty"`
}

type classLister map[string]*resourceapi.DeviceClass

func (l classLister) List() ([]*resourceapi.DeviceClass, error) {
	out := make([]*resourceapi.DeviceClass, 0, len(l))
	for _, c := range l {
		out = append(out, c)
	}
	return out, nil
}

func (l classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	if c, ok := l[name]; ok {
		return c, nil
	}
	return nil, apierrors.NewNotFound(resourceapi.Resource("deviceclasses"), name)
}

func (s *snapshot) timeout() time.Duration {
	if s.FilterTimeoutSeconds > 0 {
		return time.Duration(s.FilterTimeoutSeconds * float64(time.Second))
	}
	return filterTimeout
}

func gates(s *snapshot) map[string]bool {
	g := make(map[string]bool, len(defaultGates))
	for k, v := range defaultGates {
		g[k] = v
	}
	for k, v := range s.Gates {
		g[k] = v
	}
	return g
}

// features is the scheduler's AllocatorFeatures.
func features(g map[string]bool) structured.Features {
	return structured.Features{
		AdminAccess:             g["DRAAdminAccess"],
		PrioritizedList:         g["DRAPrioritizedList"],
		PartitionableDevices:    g["DRAPartitionableDevices"],
		DeviceTaints:            g["DRADeviceTaints"],
		DeviceBindingAndStatus:  g["DRADeviceBindingConditions"] && g["DRAResourceClaimDeviceStatus"],
		ConsumableCapacity:      g["DRAConsumableCapacity"],
		FractionalCapacityRange: g["DRAFractionalCapacityRange"],
		ListTypeAttributes:      g["DRAListTypeAttributes"],
		OptionalNodeOperations:  g["DRAOptionalNodeOperations"],
		DerivedAttributes:       g["DRADerivedAttributes"],
		CompatibilityGroups:     g["DRADeviceCompatibilityGroups"],
	}
}

// foreachAllocatedDevice is the plugin's: admin-access results are not allocated; a
// shared result (shareID) counts as shared only with DRAConsumableCapacity.
func allocatedState(claims []*resourceapi.ResourceClaim, inFlight []*resourceapi.ResourceClaim, consumable bool) structured.AllocatedState {
	st := structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
	add := func(c *resourceapi.ResourceClaim) {
		if c.Status.Allocation == nil {
			return
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if ptr.Deref(r.AdminAccess, false) {
				continue
			}
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			if r.ShareID != nil {
				if consumable {
					st.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
					if r.ConsumedCapacity != nil {
						st.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
					}
					continue
				}
			}
			st.AllocatedDevices.Insert(id)
		}
	}
	for _, c := range claims {
		add(c)
	}
	for _, c := range inFlight {
		add(c)
	}
	return st
}

// podFilter is what NodeUnschedulable, TaintToleration and NodeAffinity say, in that order.
func podFilter(pod *v1.Pod, node *v1.Node, comparisonOps bool) string {
	logger := klog.Background()
	if node.Spec.Unschedulable && !v1helper.TolerationsTolerateTaint(logger, pod.Spec.Tolerations,
		&v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}, comparisonOps) {
		return "node(s) were unschedulable"
	}
	if taint, bad := v1helper.FindMatchingUntoleratedTaint(logger, node.Spec.Taints, pod.Spec.Tolerations,
		func(t *v1.Taint) bool {
			return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
		}, comparisonOps); bad {
		return fmt.Sprintf("node(s) had untolerated taint {%s: %s}", taint.Key, taint.Value)
	}
	if ok, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(node); err != nil {
		return "error: " + err.Error()
	} else if !ok {
		return "node(s) didn't match Pod's node affinity/selector"
	}
	return ""
}

type prepared struct {
	status, reason string
	timeout        time.Duration
	toAllocate     []*resourceapi.ResourceClaim
	allocated      []*resourceapi.ResourceClaim // the pod's allocated claims
	selectors      []*nodeaffinity.NodeSelector // their allocation's node selectors
	allocator      structured.Allocator
	gates          map[string]bool
}

// validateDeviceClass is the plugin's.
func validateDeviceClass(classes classLister, class, request string) prepared {
	if class == "" {
		return prepared{status: "error", reason: fmt.Sprintf("request %s: unsupported request type", request)}
	}
	if _, ok := classes[class]; !ok {
		return prepared{status: "unschedulable", reason: fmt.Sprintf("request %s: device class %s does not exist", request, class)}
	}
	return prepared{status: "ok"}
}

// preFilter is the plugin's PreFilter for the snapshot's pod.
func preFilter(ctx context.Context, s *snapshot, celCache *cel.Cache) prepared {
	g := gates(s)
	p := prepared{status: "ok", gates: g}
	if s.Pod == nil {
		return prepared{status: "error", reason: "the snapshot has no pod"}
	}
	byName := make(map[string]*resourceapi.ResourceClaim, len(s.Claims))
	for _, c := range s.Claims {
		byName[c.Namespace+"/"+c.Name] = c
	}
	inFlight := sets.New[string]()
	for _, c := range s.InFlight {
		inFlight.Insert(c.Namespace + "/" + c.Name)
	}
	var claims []*resourceapi.ResourceClaim
	for i := range s.Pod.Spec.ResourceClaims {
		pc := &s.Pod.Spec.ResourceClaims[i]
		name, mustCheckOwner, err := resourceclaim.Name(s.Pod, pc)
		if err != nil {
			return prepared{status: "unschedulable", reason: err.Error()}
		}
		if name == nil {
			continue
		}
		c, ok := byName[s.Pod.Namespace+"/"+*name]
		if !ok {
			return prepared{status: "unschedulable", reason: fmt.Sprintf("resourceclaim.resource.k8s.io %q not found", *name)}
		}
		if c.DeletionTimestamp != nil {
			return prepared{status: "unschedulable", reason: fmt.Sprintf("resourceclaim %q is being deleted", c.Name)}
		}
		if mustCheckOwner {
			if err := resourceclaim.IsForPod(s.Pod, c, false); err != nil {
				return prepared{status: "unschedulable", reason: err.Error()}
			}
		}
		claims = append(claims, c)
	}
	if len(claims) == 0 {
		return p
	}
	classes := classLister{}
	for _, c := range s.Classes {
		classes[c.Name] = c
	}
	for _, c := range claims {
		if c.Status.Allocation != nil {
			ns, err := func() (*nodeaffinity.NodeSelector, error) {
				if c.Status.Allocation.NodeSelector == nil {
					return nil, nil
				}
				return nodeaffinity.NewNodeSelector(c.Status.Allocation.NodeSelector)
			}()
			if err != nil {
				return prepared{status: "error", reason: err.Error()}
			}
			p.allocated = append(p.allocated, c)
			p.selectors = append(p.selectors, ns)
			continue
		}
		if inFlight.Has(c.Namespace + "/" + c.Name) {
			return prepared{status: "unschedulable", reason: fmt.Sprintf("resource claim %s/%s is in the process of being allocated", c.Namespace, c.Name)}
		}
		for _, r := range c.Spec.Devices.Requests {
			switch {
			case r.Exactly != nil:
				if st := validateDeviceClass(classes, r.Exactly.DeviceClassName, r.Name); st.status != "ok" {
					return st
				}
			case len(r.FirstAvailable) > 0:
				if !g["DRAPrioritizedList"] {
					return prepared{status: "unschedulable", reason: fmt.Sprintf("resource claim %s/%s, request %s: has subrequests, but the DRAPrioritizedList feature is disabled", c.Namespace, c.Name, r.Name)}
				}
				for _, sr := range r.FirstAvailable {
					if st := validateDeviceClass(classes, sr.DeviceClassName, r.Name+"/"+sr.Name); st.status != "ok" {
						return st
					}
				}
			default:
				return prepared{status: "unschedulable", reason: fmt.Sprintf("resource claim %s/%s, request %s: unknown request type", c.Namespace, c.Name, r.Name)}
			}
		}
		p.toAllocate = append(p.toAllocate, c)
	}
	if len(p.toAllocate) == 0 {
		return p
	}
	f := features(g)
	a, err := structured.NewAllocator(ctx, f, allocatedState(s.Claims, s.InFlight, g["DRAConsumableCapacity"]), classes, s.Slices, celCache)
	if err != nil {
		return prepared{status: "error", reason: err.Error()}
	}
	p.allocator = a
	return p
}

func results(claims []*resourceapi.ResourceClaim, res []resourceapi.AllocationResult) []allocation {
	out := make([]allocation, len(res))
	for i, r := range res {
		out[i].Claim = claims[i].Namespace + "/" + claims[i].Name
		out[i].Devices = []device{}
		for _, d := range r.Devices.Results {
			out[i].Devices = append(out[i].Devices, device{Request: d.Request, Driver: d.Driver,
				Pool: d.Pool, Device: d.Device, AdminAccess: ptr.Deref(d.AdminAccess, false),
				Shared: d.ShareID != nil})
		}
	}
	return out
}

// The plugin's: an allocated device that skips node operations needs a node that declares
// them optional.
func requiresOptionalNodeOperations(a *resourceapi.AllocationResult) bool {
	for _, r := range a.Devices.Results {
		if len(r.SkipNodeOperations) > 0 {
			return true
		}
	}
	return false
}

// isClaimReadyForBinding and isClaimTimeout are the plugin's (bindingTimeout: its default).
func bindingFailed(c *resourceapi.ResourceClaim) bool {
	ready := true
	for _, r := range c.Status.Allocation.Devices.Results {
		if len(r.BindingConditions) == 0 {
			continue
		}
		var st *resourceapi.AllocatedDeviceStatus
		for i := range c.Status.Devices {
			d := &c.Status.Devices[i]
			if d.Device == r.Device && d.Driver == r.Driver && d.Pool == r.Pool {
				st = d
				break
			}
		}
		if st == nil {
			ready = false
			break
		}
		for _, cond := range r.BindingFailureConditions {
			if f := apimeta.FindStatusCondition(st.Conditions, cond); f != nil && f.Status == metav1.ConditionTrue {
				return true
			}
		}
		for _, cond := range r.BindingConditions {
			if !apimeta.IsStatusConditionTrue(st.Conditions, cond) {
				ready = false
			}
		}
		if !ready {
			break
		}
	}
	if ready || c.Status.Allocation.AllocationTimestamp == nil {
		return false
	}
	for _, r := range c.Status.Allocation.Devices.Results {
		if r.BindingConditions != nil && c.Status.Allocation.AllocationTimestamp.Add(bindingTimeout).Before(time.Now()) {
			return true
		}
	}
	return false
}

// filter is the plugin's Filter on one node.
func filter(ctx context.Context, p *prepared, node *v1.Node) nodeAnswer {
	na := nodeAnswer{Node: node.Name, Status: "fit"}
	unavailable := false
	for i, c := range p.allocated {
		if ns := p.selectors[i]; ns != nil && !ns.Match(node) {
			unavailable = true
			continue
		}
		if requiresOptionalNodeOperations(c.Status.Allocation) &&
			!slices.Contains(node.Status.DeclaredFeatures, "DRAOptionalNodeOperations") {
			unavailable = true
			continue
		}
		if p.gates["DRADeviceBindingConditions"] && p.gates["DRAResourceClaimDeviceStatus"] && bindingFailed(c) {
			unavailable = true
		}
	}
	if p.allocator != nil {
		actx := ctx
		if p.gates["DRASchedulerFilterTimeout"] {
			c, cancel := context.WithTimeout(ctx, p.timeout)
			defer cancel()
			actx = c
		}
		res, err := p.allocator.Allocate(actx, node, p.toAllocate)
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return nodeAnswer{Node: node.Name, Status: "error", Reason: fmt.Sprintf("node %s: timed out trying to allocate devices", node.Name)}
		case errors.Is(err, structured.ErrFailedAllocationOnNode):
			return nodeAnswer{Node: node.Name, Status: "unschedulable", Reason: err.Error()}
		case err != nil:
			return nodeAnswer{Node: node.Name, Status: "error", Reason: err.Error()}
		}
		if len(res) != len(p.toAllocate) {
			return nodeAnswer{Node: node.Name, Status: "unschedulable", Reason: "cannot allocate all claims"}
		}
		na.Allocations = results(p.toAllocate, res)
	}
	if unavailable {
		return nodeAnswer{Node: node.Name, Status: "unschedulable", Reason: "resourceclaim not available on the node"}
	}
	return na
}

func run(ctx context.Context, s *snapshot) answer {
	g := gates(s)
	cache := cel.NewCache(10, cel.Features{EnableConsumableCapacity: g["DRAConsumableCapacity"],
		EnableListTypeAttributes: g["DRAListTypeAttributes"]})
	p := preFilter(ctx, s, cache)
	p.timeout = s.timeout()
	a := answer{Name: s.Name, Status: p.status, Reason: p.reason}
	nodes := append([]*v1.Node(nil), s.Nodes...)
	sort.SliceStable(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	for _, n := range nodes {
		var na nodeAnswer
		if p.status != "ok" {
			na = nodeAnswer{Node: n.Name, Status: p.status, Reason: p.reason}
		} else {
			na = filter(ctx, &p, n)
		}
		if s.Pod != nil {
			na.PodFilter = podFilter(s.Pod, n, g["TaintTolerationComparisonOperators"])
		}
		a.Nodes = append(a.Nodes, na)
	}
	return a
}

// cpuTime is the process's CPU time (user and system, the garbage collector's included):
// the benchmark's machine is shared, and the C side measures its CPU time too.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// bench runs the plugin's PreFilter and Filter on every node, n times.
func bench(ctx context.Context, s *snapshot, n int) {
	g := gates(s)
	cache := cel.NewCache(10, cel.Features{EnableConsumableCapacity: g["DRAConsumableCapacity"],
		EnableListTypeAttributes: g["DRAListTypeAttributes"]})
	fits := 0
	start := cpuTime()
	for i := 0; i < n; i++ {
		p := preFilter(ctx, s, cache)
		p.timeout = s.timeout()
		fits = 0
		for _, node := range s.Nodes {
			if filter(ctx, &p, node).Status == "fit" {
				fits++
			}
		}
	}
	el := cpuTime() - start
	fmt.Printf("{\"name\": %q, \"nodes\": %d, \"fit\": %d, \"ns_per_pod\": %.0f}\n", s.Name, len(s.Nodes), fits,
		float64(el.Nanoseconds())/float64(n))
}

func main() {
	n := flag.Int("bench", 0, "run each snapshot this many times and print ns per pod")
	flag.Parse()
	klog.SetOutput(os.Stderr)
	ctx := context.Background()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 256<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for in.Scan() {
		var s snapshot
		if err := json.Unmarshal(in.Bytes(), &s); err != nil {
			enc.Encode(answer{Status: "bad_request", Reason: err.Error()})
			out.Flush()
			continue
		}
		s.setDefaults()
		if *n > 0 {
			bench(ctx, &s, *n)
			out.Flush()
			continue
		}
		enc.Encode(run(ctx, &s))
		out.Flush()
	}
}
