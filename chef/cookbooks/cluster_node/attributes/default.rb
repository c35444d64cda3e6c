# frozen_string_literal: true

# Everything else under node['cluster_node'] comes from build/chef/<site>.json (`invoke chef-attributes`).
# This server's entry in node['cluster_node']['servers']; nil means the host name (ohai's node['hostname']).
default['cluster_node']['server'] = nil
default['cluster_node']['image_scripts_dir'] = '/var/lib/cluster-node/image-scripts'
default['cluster_node']['swanctl_dir'] = '/etc/swanctl/conf.d'
default['cluster_node']['kubeadm_join_config'] = '/etc/kubernetes/kubeadm-join.yaml'
