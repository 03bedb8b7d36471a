package errors

import (
	moved "sigs.k8s.io/cluster-api/api/deprecated/errors"
)

// The status error types, each an alias of the type of the same name in the new home.
type (
	MachineStatusError             = moved.MachineStatusError
	ClusterStatusError             = moved.ClusterStatusError
	MachineSetStatusError          = moved.MachineSetStatusError
	MachinePoolStatusFailure       = moved.MachinePoolStatusFailure
	KubeadmControlPlaneStatusError = moved.KubeadmControlPlaneStatusError
)

// The error types, aliases of the new home's.
type (
	ClusterError             = moved.ClusterError
	MachineError             = moved.MachineError
	KubeadmControlPlaneError = moved.KubeadmControlPlaneError
)

// The status error values, the new home's.
const (
	InvalidConfigurationMachineError  = moved.InvalidConfigurationMachineError
	UnsupportedChangeMachineError     = moved.UnsupportedChangeMachineError
	InsufficientResourcesMachineError = moved.InsufficientResourcesMachineError
	CreateMachineError                = moved.CreateMachineError
	UpdateMachineError                = moved.UpdateMachineError
	DeleteMachineError                = moved.DeleteMachineError

	InvalidConfigurationClusterError = moved.InvalidConfigurationClusterError
	UnsupportedChangeClusterError    = moved.UnsupportedChangeClusterError
	CreateClusterError               = moved.CreateClusterError
	UpdateClusterError               = moved.UpdateClusterError
	DeleteClusterError               = moved.DeleteClusterError

	InvalidConfigurationMachineSetError = moved.InvalidConfigurationMachineSetError

	InvalidConfigurationMachinePoolError = moved.InvalidConfigurationMachinePoolError

	InvalidConfigurationKubeadmControlPlaneError = moved.InvalidConfigurationKubeadmControlPlaneError
	UnsupportedChangeKubeadmControlPlaneError    = moved.UnsupportedChangeKubeadmControlPlaneError
	CreateKubeadmControlPlaneError               = moved.CreateKubeadmControlPlaneError
	UpdateKubeadmControlPlaneError               = moved.UpdateKubeadmControlPlaneError
	DeleteKubeadmControlPlaneError               = moved.DeleteKubeadmControlPlaneError
)

// The constructors of the error types call the new home's.

// InvalidClusterConfiguration is the new home's InvalidClusterConfiguration.
func InvalidClusterConfiguration(format string, args ...any) *ClusterError {
	return moved.InvalidClusterConfiguration(format, args...)
}

// CreateCluster is the new home's CreateCluster.
func CreateCluster(format string, args ...any) *ClusterError {
	return moved.CreateCluster(format, args...)
}

// DeleteCluster is the new home's DeleteCluster.
func DeleteCluster(format string, args ...any) *ClusterError {
	return moved.DeleteCluster(format, args...)
}

// InvalidMachineConfiguration is the new home's InvalidMachineConfiguration.
func InvalidMachineConfiguration(msg string, args ...any) *MachineError {
	return moved.InvalidMachineConfiguration(msg, args...)
}

// CreateMachine is the new home's CreateMachine.
func CreateMachine(msg string, args ...any) *MachineError { return moved.CreateMachine(msg, args...) }

// UpdateMachine is the new home's UpdateMachine.
func UpdateMachine(msg string, args ...any) *MachineError { return moved.UpdateMachine(msg, args...) }

// DeleteMachine is the new home's DeleteMachine.
func DeleteMachine(msg string, args ...any) *MachineError { return moved.DeleteMachine(msg, args...) }
