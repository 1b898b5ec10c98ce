package kserveapi

import (
	"reflect"
	"testing"

	"github.com/kserve/kserve/pkg/constants"
	"k8s.io/apimachinery/pkg/runtime"
)

// The names the deploy step relies on are KServe's (its constants package builds beside the
// product's Kubernetes libraries; the types are held to KServe's in test/kservetypes).
func TestConstantsAreKServes(t *testing.T) {
	for _, c := range []struct{ ours, theirs string }{
		{SchemeGroupVersion.Group, constants.KServeAPIGroupName},
		{ContainerName, constants.InferenceServiceContainerName},
		{PodLabel, constants.InferenceServicePodLabelKey},
		{SourceURIAnnotation, constants.StorageInitializerSourceUriInternalAnnotationKey},
		{DeploymentModeAnnotation, constants.DeploymentMode},
	} {
		if c.ours != c.theirs {
			t.Errorf("%q, KServe's %q", c.ours, c.theirs)
		}
	}
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []runtime.Object{&InferenceService{}, &InferenceServiceList{}} {
		gvks, _, err := s.ObjectKinds(obj)
		want := "serving.kserve.io/v1beta1, Kind=" + reflect.TypeOf(obj).Elem().Name()
		if err != nil || len(gvks) != 1 || gvks[0].String() != want {
			t.Errorf("%T: kinds %v (%v), want %s", obj, gvks, err, want)
		}
	}
}
