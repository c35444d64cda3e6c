# frozen_string_literal: true

# Converges one physical server of a site from build/chef/<site>.json.
unless node['cluster_node']['site']
  raise 'cluster_node: no attributes; converge with `chef-client -j build/chef/<site>.json` (invoke chef-attributes)'
end

include_recipe 'cluster_node::site_credentials'
include_recipe 'cluster_node::dns_forwarding'
include_recipe 'cluster_node::package_lock'
include_recipe 'cluster_node::image_scripts'
include_recipe 'cluster_node::users'
include_recipe 'cluster_node::nfs_server' if nfs_server?
include_recipe 'cluster_node::nfs_client' if node['cluster_node']['nfs']
include_recipe 'cluster_node::vpn_gateway' if cluster_role?('gateway')
# The gateway joins too (tainted, no jobs): as a flannel member it routes the pod network for the site's other
# machines (recipe pod_routing).
include_recipe 'cluster_node::kubernetes_join' if cluster_role?('worker') || cluster_role?('gateway')
