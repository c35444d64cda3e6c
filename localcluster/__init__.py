"""The local cluster: real Kubernetes on loopback (docs/localcluster.md).

etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubeadm, kubectl, kwok and the gang scheduler,
built from the pinned Go modules under ``localcluster/go/`` (``make tools``), started as processes of this
machine with certificates, kubeconfigs and flags from kubeadm's own phases, fed by the kubeadm configuration the
control plane's bootstrap renders in production. Every address it writes is in 127.0.0.0/8.
"""
