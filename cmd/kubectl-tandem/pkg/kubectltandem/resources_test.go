package kubectltandem

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

func TestArithmetic(t *testing.T) {
	testCases := map[string]struct {
		got  v1.ResourceList
		want string
	}{
		"add":                                   {got: add(rl("cpu=1,memory=1Gi"), rl("cpu=500m,nvidia.com/gpu=1"), nil), want: "cpu=1500m,memory=1Gi,nvidia.com/gpu=1"},
		"sub goes negative":                     {got: sub(rl("cpu=1"), rl("cpu=1500m,memory=1Gi")), want: "cpu=-500m,memory=-1Gi"},
		"sub drops zeros":                       {got: sub(rl("cpu=1,pods=1"), rl("pods=1")), want: "cpu=1"},
		"atLeastZero":                           {got: atLeastZero(sub(rl("cpu=1,memory=2Gi"), rl("cpu=2,memory=1Gi"))), want: "memory=1Gi"},
		"names: cpu, memory, pods, then sorted": {got: rl("pods=1,example.com/b=1,memory=1,example.com/a=1,cpu=1"), want: "cpu=1,memory=1,pods=1,example.com/a=1,example.com/b=1"},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, format(tc.got)); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestPodRequests(t *testing.T) {
	pod := makePod("arc", "p").req(rl("cpu=1,memory=1Gi")).obj()
	pod.Spec.InitContainers = []v1.Container{{Name: "init", Resources: v1.ResourceRequirements{Requests: rl("cpu=2")}}}
	pod.Spec.Overhead = rl("cpu=100m")
	if diff := cmp.Diff("cpu=2100m,memory=1Gi,pods=1", format(podRequests(pod))); diff != "" {
		t.Errorf("podRequests (-want,+got):\n%s", diff)
	}
}

func TestParseResourceList(t *testing.T) {
	testCases := map[string]struct {
		in      string
		want    string
		wantErr string
	}{
		"sizes":      {in: " cpu=2, memory=4Gi,nvidia.com/gpu=1 ", want: "cpu=2,memory=4Gi,nvidia.com/gpu=1"},
		"not a pair": {in: "cpu", wantErr: `"cpu" is not name=quantity`},
		"bad amount": {in: "cpu=lots", wantErr: `invalid quantity "lots" for cpu: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`},
		"negative":   {in: "cpu=-1", wantErr: `negative quantity "-1" for cpu`},
		"twice":      {in: "cpu=1,cpu=2", wantErr: "resource cpu given twice"},
		"nothing":    {in: " , ", wantErr: "no resources given"},
	}
	for name, tc := range testCases {
		t.Run(name, func(t *testing.T) {
			got, err := parseResourceList(tc.in)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Fatalf("error (-want,+got):\n%s", diff)
			}
			if err == nil {
				if diff := cmp.Diff(tc.want, format(got)); diff != "" {
					t.Errorf("(-want,+got):\n%s", diff)
				}
			}
		})
	}
}
