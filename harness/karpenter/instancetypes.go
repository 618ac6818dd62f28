package karpenter

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
)

// InstanceTypesFileName is KWOK's own instance type catalogue (the
// instance_types.json its cloud provider embeds), which
// hack/build-karpenter.sh copies beside the binary.
const InstanceTypesFileName = Name + "-instance-types.json"

// InstanceType is an instance type Start adds to KWOK's catalogue, for
// instances KWOK's own do not model (GPUs: its catalogue has none).
type InstanceType struct {
	// Name must not be one of KWOK's. Its instance-family label is the part
	// before the first "-" or "." ("g" for g-8x-amd64-linux-1gpu; a name
	// with neither: its first character), its instance-cpu label its cpu.
	Name string
	// Resources is the instance's capacity: cpu, memory and any extended
	// resource (nvidia.com/gpu). KWOK adds pods=110 when it is absent and
	// takes 100m cpu and 10Mi of memory off the allocatable.
	Resources v1.ResourceList
	// Price is the hourly price of its one offering: on-demand, amd64,
	// linux, in zone test-zone-a.
	Price float64
}

// kwokInstanceType is KWOK's JSON shape of an instance type
// (kwok/cloudprovider.InstanceTypeOptions; its offerings' fields have no
// JSON tags).
type kwokInstanceType struct {
	Name             string          `json:"name"`
	Offerings        []kwokOffering  `json:"offerings"`
	Architecture     string          `json:"architecture"`
	OperatingSystems []string        `json:"operatingSystems"`
	Resources        v1.ResourceList `json:"resources"`
}

type kwokOffering struct {
	Price        float64
	Available    bool
	Requirements []v1.NodeSelectorRequirement
}

// writeInstanceTypes writes, to dir, KWOK's catalogue (read from binDir)
// with extra appended, and returns the file's path.
func writeInstanceTypes(binDir, dir string, extra []InstanceType) (string, error) {
	base := filepath.Join(binDir, InstanceTypesFileName)
	data, err := os.ReadFile(base)
	if err != nil {
		return "", fmt.Errorf("KWOK's instance types (run make karpenter): %w", err)
	}
	var all []json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return "", fmt.Errorf("parsing %s: %w", base, err)
	}
	names := map[string]bool{}
	for _, raw := range all {
		var it struct{ Name string }
		if err := json.Unmarshal(raw, &it); err != nil {
			return "", fmt.Errorf("parsing %s: %w", base, err)
		}
		names[it.Name] = true
	}
	for _, it := range extra {
		if it.Name == "" || names[it.Name] {
			return "", fmt.Errorf("instance type %q: empty or already in KWOK's catalogue", it.Name)
		}
		names[it.Name] = true
		in := func(key string, values ...string) v1.NodeSelectorRequirement {
			return v1.NodeSelectorRequirement{Key: key, Operator: v1.NodeSelectorOpIn, Values: values}
		}
		raw, err := json.Marshal(kwokInstanceType{
			Name: it.Name,
			Offerings: []kwokOffering{{
				Price:     it.Price,
				Available: true,
				Requirements: []v1.NodeSelectorRequirement{
					in("karpenter.sh/capacity-type", "on-demand"),
					in(v1.LabelTopologyZone, "test-zone-a"),
				},
			}},
			Architecture:     "amd64",
			OperatingSystems: []string{"linux"},
			Resources:        it.Resources,
		})
		if err != nil {
			return "", err
		}
		all = append(all, raw)
	}
	data, err = json.Marshal(all)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, InstanceTypesFileName)
	return path, os.WriteFile(path, data, 0o644)
}
