package controller

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kkloudv1 "example.com/echo/api/v1"
)

var _ = Describe("Echo controller", func() {
	It("makes a Deployment that the Echo owns", func() {
		echo := newEcho("owned")
		Expect(k8sClient.Create(ctx, echo)).To(Succeed())
		reconcileOnce(echo)

		var dep appsv1.Deployment
		Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: "default", Name: "echo-owned"}, &dep)).To(Succeed())
		Expect(dep.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
		Expect(metav1.IsControlledBy(&dep, echo)).To(BeTrue())
	})

	It("has the Deployment collected when the Echo is deleted", func() {
		echo := newEcho("collected")
		Expect(k8sClient.Create(ctx, echo)).To(Succeed())
		reconcileOnce(echo)
		key := types.NamespacedName{Namespace: "default", Name: "echo-collected"}
		Expect(k8sClient.Get(ctx, key, &appsv1.Deployment{})).To(Succeed())

		Expect(k8sClient.Delete(ctx, echo)).To(Succeed())
		// Nothing in Reconcile deletes it: the garbage collector follows
		// the ownerReference. envtest runs none, so there it stays.
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, key, &appsv1.Deployment{}))
		}, 10*time.Second, 100*time.Millisecond).Should(BeTrue())
	})
})

func newEcho(name string) *kkloudv1.Echo {
	return &kkloudv1.Echo{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       kkloudv1.EchoSpec{Message: "hi", Replicas: 2},
	}
}

func reconcileOnce(echo *kkloudv1.Echo) {
	r := &EchoReconciler{Client: k8sClient, Scheme: k8sClient.Scheme(), APIReader: k8sClient}
	_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: echo.Namespace, Name: echo.Name}})
	Expect(err).NotTo(HaveOccurred())
}
