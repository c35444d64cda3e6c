"""The first month of operations (issue 29, docs/operations.md): etcd backups and restores, upgrades, certificates,
monitoring, cost and a safe teardown. Commands reach the cluster's instances through SSM Run Command (Session
Manager's agent), the operator access path of the project."""
