module sigs.k8s.io/cluster-api/errors

go 1.26.0

require sigs.k8s.io/cluster-api/api v1.14.2
