// celoracle compiles and evaluates DRA device selectors exactly as Kubernetes
// does, with k8s.io/dynamic-resource-allocation's own cel package at the e2e's
// Kubernetes version: kube-apiserver's create validation (NewExpressions
// environment, the 10 KiB length limit, the estimated cost against
// CELSelectorExpressionMaxCost) and then kube-scheduler's evaluation
// (StoredExpressions environment, DeviceMatches on the device).
//
// It is the reference dra-doctor's lib/cel is tested against
// (tests/unit/test_cel_oracle.c, tests/fuzz/cel-differential.sh, bench/cel-bench.sh).
//
//	celoracle            one JSON case a line on stdin, one JSON answer a line on stdout
//	celoracle -bench N   a case on stdin: compile once, evaluate on N devices, print ns/device
//
// A case: {"expression": "...", "device": {"driver": ..., "attributes": {...},
// "capacity": {...}, "allowMultipleAllocations": bool}, "gates": {"DRAListTypeAttributes": true}}
// (the device in resource.k8s.io/v1 JSON).  An answer: {"outcome": "compile_error" |
// "runtime_error" | "true" | "false", "detail": "...", "cost": estimated max cost,
// "actual": runtime cost}.  Gates default to v1.37's: DRAConsumableCapacity on,
// DRAListTypeAttributes off.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apiserver/pkg/cel/environment"
	dracel "k8s.io/dynamic-resource-allocation/cel"
)

type device struct {
	Driver                   string                                                 `json:"driver"`
	Attributes               map[resourceapi.QualifiedName]resourceapi.DeviceAttribute `json:"attributes"`
	Capacity                 map[resourceapi.QualifiedName]resourceapi.DeviceCapacity  `json:"capacity"`
	AllowMultipleAllocations *bool                                                  `json:"allowMultipleAllocations"`
}

type request struct {
	Expression string          `json:"expression"`
	Device     device          `json:"device"`
	Gates      map[string]bool `json:"gates"`
}

type answer struct {
	Outcome string `json:"outcome"`
	Detail  string `json:"detail"`
	Cost    uint64 `json:"cost"`
	Actual  uint64 `json:"actual"`
}

func features(g map[string]bool) dracel.Features {
	f := dracel.Features{EnableConsumableCapacity: true}
	if v, ok := g["DRAConsumableCapacity"]; ok {
		f.EnableConsumableCapacity = v
	}
	f.EnableListTypeAttributes = g["DRAListTypeAttributes"]
	return f
}

func (d device) dra() dracel.Device {
	return dracel.Device{Driver: d.Driver, Attributes: d.Attributes, Capacity: d.Capacity,
		AllowMultipleAllocations: d.AllowMultipleAllocations}
}

// run is one case: validation as kube-apiserver's validateCELSelector does it, then the
// scheduler's evaluation with a freshly compiled stored expression.  cel-go panics building
// some programs (a constant map literal with a bytes key); kube-apiserver's panic recovery
// then fails the request, so the object is refused as with a compile error.
func run(r request) (a answer) {
	defer func() {
		if p := recover(); p != nil {
			a = answer{Outcome: "compile_error", Detail: fmt.Sprintf("panic: %v", p)}
		}
	}()
	if len(r.Expression) > resourceapi.CELSelectorExpressionMaxLength {
		return answer{Outcome: "compile_error", Detail: "Too long: may not be more than 10240 bytes"}
	}
	c := dracel.GetCompiler(features(r.Gates))
	newEnv := environment.NewExpressions
	v := c.CompileCELExpression(r.Expression, dracel.Options{EnvType: &newEnv})
	if v.Error != nil {
		return answer{Outcome: "compile_error", Detail: v.Error.Detail, Cost: v.MaxCost}
	}
	if v.MaxCost > resourceapi.CELSelectorExpressionMaxCost {
		return answer{Outcome: "compile_error", Detail: "too complex, exceeds cost limit", Cost: v.MaxCost}
	}
	s := c.CompileCELExpression(r.Expression, dracel.Options{})
	if s.Error != nil {
		return answer{Outcome: "compile_error", Detail: "stored: " + s.Error.Detail, Cost: v.MaxCost}
	}
	ok, details, err := s.DeviceMatches(context.Background(), r.Device.dra())
	a = answer{Cost: v.MaxCost}
	if details != nil && details.ActualCost() != nil {
		a.Actual = *details.ActualCost()
	}
	switch {
	case err != nil:
		a.Outcome, a.Detail = "runtime_error", err.Error()
	case ok:
		a.Outcome = "true"
	default:
		a.Outcome = "false"
	}
	return a
}

// bench evaluates one compiled selector on n devices that differ in one attribute,
// as the scheduler evaluates a class over a cluster's published devices.
func bench(r request, n int) error {
	c := dracel.GetCompiler(features(r.Gates))
	s := c.CompileCELExpression(r.Expression, dracel.Options{})
	if s.Error != nil {
		return fmt.Errorf("compile: %s", s.Error.Detail)
	}
	devs := make([]dracel.Device, n)
	for i := range devs {
		d := r.Device.dra()
		attrs := make(map[resourceapi.QualifiedName]resourceapi.DeviceAttribute, len(d.Attributes)+1)
		for k, v := range d.Attributes {
			attrs[k] = v
		}
		idx := int64(i)
		attrs["index"] = resourceapi.DeviceAttribute{IntValue: &idx}
		d.Attributes = attrs
		devs[i] = d
	}
	ctx := context.Background()
	matched := 0
	start := time.Now()
	for i := range devs {
		ok, _, err := s.DeviceMatches(ctx, devs[i])
		if err == nil && ok {
			matched++
		}
	}
	el := time.Since(start)
	fmt.Printf("{\"devices\": %d, \"matched\": %d, \"ns_per_device\": %.1f}\n", n, matched,
		float64(el.Nanoseconds())/float64(n))
	return nil
}

func main() {
	n := flag.Int("bench", 0, "evaluate the one case on stdin over this many devices")
	flag.Parse()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for in.Scan() {
		var r request
		if err := json.Unmarshal(in.Bytes(), &r); err != nil {
			enc.Encode(answer{Outcome: "bad_request", Detail: err.Error()})
			out.Flush()
			continue
		}
		if *n > 0 {
			if err := bench(r, *n); err != nil {
				fmt.Fprintln(os.Stderr, "celoracle:", err)
				os.Exit(1)
			}
			return
		}
		enc.Encode(run(r))
		out.Flush()
	}
}
