package kubectltandem

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"
)

// OutputVersion is the apiVersion of what -o json and -o yaml print. It
// names kubectl-tandem's output format, not an API any server serves.
const OutputVersion = "kubectl.tandem.dev/v1alpha1"

// NodeUsageList is what `kubectl tandem nodes -o json|yaml` prints.
type NodeUsageList struct {
	metav1.TypeMeta `json:",inline"`
	Items           []NodeUsage `json:"items"`
}

// ReservationList is what `kubectl tandem reservations -o json|yaml`
// prints.
type ReservationList struct {
	metav1.TypeMeta `json:",inline"`
	Items           []Reservation `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (l *NodeUsageList) DeepCopyObject() runtime.Object { return deepCopy(l) }

// DeepCopyObject implements runtime.Object.
func (l *ReservationList) DeepCopyObject() runtime.Object { return deepCopy(l) }

// DeepCopyObject implements runtime.Object.
func (e *Explanation) DeepCopyObject() runtime.Object { return deepCopy(e) }

// deepCopy copies an output object through its JSON form, which is all
// there is to it: every field is serialised.
func deepCopy[T any, PT interface {
	*T
	runtime.Object
}](in PT) runtime.Object {
	data, err := json.Marshal(in)
	if err != nil {
		panic(fmt.Sprintf("copying %T: %v", in, err))
	}
	out := PT(new(T))
	if err := json.Unmarshal(data, out); err != nil {
		panic(fmt.Sprintf("copying %T: %v", in, err))
	}
	return out
}

func kind(name string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: OutputVersion, Kind: name}
}

// printer prints a command's result in the -o format: a table (wide or
// not) or, through cli-runtime's printers, json or yaml.
type printer struct {
	format string
	json   *genericclioptions.JSONYamlPrintFlags
}

func newPrinter() *printer {
	return &printer{json: genericclioptions.NewJSONYamlPrintFlags()}
}

// validate checks the -o value before anything is read from the cluster.
func (p *printer) validate() error {
	if p.format == "" || p.format == "wide" {
		return nil
	}
	_, err := p.json.ToPrinter(p.format)
	if err != nil {
		return fmt.Errorf("unable to match a printer for --output=%q, allowed: %s", p.format, strings.Join(p.allowed(), ", "))
	}
	return nil
}

func (p *printer) allowed() []string {
	return append([]string{"wide"}, p.json.AllowedFormats()...)
}

// print prints table as a table, or obj in the json or yaml format.
func (p *printer) print(w io.Writer, table *metav1.Table, obj runtime.Object) error {
	if p.format == "" || p.format == "wide" {
		return printers.NewTablePrinter(printers.PrintOptions{Wide: p.format == "wide"}).PrintObj(table, w)
	}
	pr, err := p.json.ToPrinter(p.format)
	if err != nil {
		return err
	}
	return pr.PrintObj(obj, w)
}
