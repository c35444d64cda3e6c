# frozen_string_literal: true

# kubeadm join, once: skipped when the kubelet's configuration exists (the node has joined). The join token and
# the CA hash come from SSM at converge time; the config holding them is written 0600 and removed after joining.
provides :cluster_node_kubeadm_join
unified_mode true

property :node_name, String, name_property: true
property :server, Hash, required: true
property :kubelet_config, String, default: '/var/lib/kubelet/config.yaml'

action :join do
  if ::File.exist?(new_resource.kubelet_config)
    Chef::Log.info("#{new_resource.node_name} has joined already (#{new_resource.kubelet_config} exists)")
  else
    k8s = node['cluster_node']['kubernetes']
    config = node['cluster_node']['kubeadm_join_config']

    directory ::File.dirname(config) do
      mode '0755'
    end

    template config do
      source 'kubeadm-join.yaml.erb'
      cookbook 'cluster_node'
      owner 'root'
      group 'root'
      mode '0600'
      sensitive true
      variables(
        node_name: new_resource.node_name,
        server: new_resource.server,
        token: ClusterNode::Ssm.secure_string(k8s['join_token_parameter'], k8s['parameter_region']),
        ca_cert_hash: ClusterNode::Ssm.secure_string(k8s['ca_cert_hash_parameter'], k8s['parameter_region'])
      )
    end

    execute 'kubeadm join' do
      command ['kubeadm', 'join', '--config', config]
      creates new_resource.kubelet_config
    end

    file config do
      action :delete
    end
  end
end
