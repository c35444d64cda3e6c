# frozen_string_literal: true

# The swanctl secrets file: each tunnel's pre-shared key, read from SSM at converge time (mode 0600, never logged).
provides :cluster_node_vpn_secrets
unified_mode true

property :path, String, name_property: true
property :tunnels, Array, required: true

action :create do
  secrets = new_resource.tunnels.to_h do |t|
    [t['name'], ClusterNode::Ssm.secure_string(t['psk_parameter'], t['region'])]
  end

  template new_resource.path do
    source 'swanctl-secrets.conf.erb'
    cookbook 'cluster_node'
    owner 'root'
    group 'root'
    mode '0600'
    sensitive true
    variables(tunnels: new_resource.tunnels, secrets: secrets)
  end
end
