package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func metav1Now() metav1.Time { return metav1.NewTime(time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)) }
