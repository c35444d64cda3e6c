"""Authentication and authorization as kube-apiserver does them: client certificates of the cluster CA and
ServiceAccount tokens (``authn``, ``tokens``, ``pki``), impersonation, RBAC over the stored Roles, ClusterRoles and
bindings with the bootstrap policy (``rbac``), and the access reviews ``kubectl auth can-i`` and ``kubectl auth
whoami`` use (``reviews``)."""
