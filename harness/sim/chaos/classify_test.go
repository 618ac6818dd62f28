package chaos

import "testing"

func TestClassify(t *testing.T) {
	tests := map[string]Class{
		"RunnerFailed":             ByFault,
		"NodeDeleted":              ByFault,
		"RunnerPodDeleted":         ByFault,
		"HookAPIError":             ByFault,
		"OutOfcpu":                 ByCapacity,
		"OutOfmemory":              ByCapacity,
		"OutOfpods":                ByCapacity,
		"OutOfnvidia.com/gpu":      ByCapacity,
		"PrepareJobTimeout":        ByCapacity,
		"NodePorts":                ByCapacity,
		"NodeAffinity":             ByCapacity,
		"UnexpectedAdmissionError": ByCapacity,
		"WorkflowPodGone":          ByOther,
		"HookError":                ByOther,
		"JobContainerRequired":     ByOther,
		"Error":                    ByOther,
		"":                         ByOther,
	}
	for reason, want := range tests {
		t.Run(reason, func(t *testing.T) {
			if got := Classify(reason); got != want {
				t.Errorf("Classify(%q) = %s, want %s", reason, got, want)
			}
		})
	}
}
