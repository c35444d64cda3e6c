# frozen_string_literal: true

# kubeadm join that recovers (ClusterNode::Joiner): skipped when the node is registered with the API server (its
# kubelet.conf works); a partial join is reset first; a failed join is reset and retried with backoff; an expired
# token is replaced by the current one from SSM. The config holding the token is 0600 and removed afterwards.
provides :cluster_node_kubeadm_join
unified_mode true

property :node_name, String, name_property: true
property :server, Hash, required: true
property :kubelet_config, String, default: '/var/lib/kubelet/config.yaml'
property :kubelet_kubeconfig, String, default: '/etc/kubernetes/kubelet.conf'
property :attempts, Integer, default: 3

action :join do
  k8s = node['cluster_node']['kubernetes']
  config = node['cluster_node']['kubeadm_join_config']
  name = new_resource.node_name
  kubeconfig = new_resource.kubelet_kubeconfig
  server = new_resource.server
  template = ::File.expand_path('../templates/kubeadm-join.yaml.erb', __dir__)

  joined = lambda do
    ::File.exist?(kubeconfig) &&
      !shell_out('kubectl', '--kubeconfig', kubeconfig, 'get', 'node', name, '--request-timeout=20s').error?
  end
  partial = -> { ::File.exist?(new_resource.kubelet_config) || ::File.exist?(kubeconfig) }
  write_config = lambda do |token|
    ca_hash = ClusterNode::Ssm.secure_string(k8s['ca_cert_hash_parameter'], k8s['parameter_region'])
    view = ClusterNode::ErbView.new(node, node_name: name, server: server, token: token, ca_cert_hash: ca_hash)
    ::FileUtils.mkdir_p(::File.dirname(config), mode: 0o755)
    text = view.render(::File.read(template))
    ::File.open(config, ::File::WRONLY | ::File::CREAT | ::File::TRUNC, 0o600) { |f| f.write(text) }
    config
  end
  run = lambda do |argv|
    cmd = shell_out(*argv, timeout: 600)
    ClusterNode::Joiner::Result.new(ok: !cmd.error?, output: "#{cmd.stdout}\n#{cmd.stderr}")
  end

  # The join that cannot be lost: a token-less join configuration, /usr/local/sbin/cluster-join (one attempt) and
  # cluster-join.service, which systemd restarts with back-off until the server is registered. The converge
  # tries once inline (Joiner: a partial join reset, an expired token replaced); if that fails the unit goes on.
  token_less = ClusterNode::ErbView.new(node, node_name: name, server: server, token: '__JOIN_TOKEN__',
                                              ca_cert_hash: '__CA_CERT_HASH__')
  ::File.write("#{config}.template", token_less.render(::File.read(template)), perm: 0o600)
  { '/usr/local/sbin/cluster-join' => [::File.expand_path('../templates/cluster-join.sh.erb', __dir__), 0o700],
    '/etc/systemd/system/cluster-join.service' => [::File.expand_path('../templates/cluster-join.service.erb', __dir__),
                                                   0o644] }.each do |path, (erb, mode)|
    ::File.write(path, ClusterNode::ErbView.new(node, {}).render(::File.read(erb)), perm: mode)
  end
  shell_out!('systemctl', 'daemon-reload')

  if joined.call
    Chef::Log.info("#{name} is registered with the API server (#{kubeconfig} works): not joining")
    return
  end

  # Room for the system, as the cloud nodes reserve it (clusterspec/kubelet_reserved.py): a kubeadm patch of the
  # KubeletConfiguration, from this server's cores.
  patches = ClusterNode::KubeletReserved::PATCHES_DIR # templates/kubeadm-join.yaml.erb names the same directory
  ::FileUtils.mkdir_p(patches, mode: 0o755)
  reserved = ClusterNode::KubeletReserved.config(node['cpu']['total'].to_i)
  ::File.write(::File.join(patches, 'kubeletconfiguration+merge.yaml'), reserved.to_yaml)

  converge_by("kubeadm join #{name} to #{k8s['api_endpoint']}") do
    ops = ClusterNode::Joiner::Ops.new(
      run: run, joined: joined, partial: partial, write_config: write_config,
      fetch_token: -> { ClusterNode::Ssm.secure_string(k8s['join_token_parameter'], k8s['parameter_region']) }
    )
    joiner = ClusterNode::Joiner.new(ops, attempts: new_resource.attempts)
    begin
      Chef::Log.info("#{name}: #{joiner.join!}")
    rescue RuntimeError => e
      Chef::Log.warn("#{name}: #{e.message}; cluster-join.service keeps trying with back-off")
      shell_out!('systemctl', 'enable', '--now', '--no-block', 'cluster-join.service')
    ensure
      ::FileUtils.rm_f(config)
    end
  end
end
