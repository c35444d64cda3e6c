# frozen_string_literal: true

# Joins this server to the cluster with its labels (site, GPU model, the spec's) and taints; recovers from a failed
# or partial join and from an expired token (resources/kubeadm_join.rb, libraries/kubeadm.rb).
cluster_node_kubeadm_join cluster_server_name do
  server cluster_server.to_h
end
