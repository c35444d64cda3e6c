# frozen_string_literal: true

# Joins this server to the cluster once, with its labels (site, GPU model, the spec's) and taints.
cluster_node_kubeadm_join cluster_server_name do
  server cluster_server.to_h
end
