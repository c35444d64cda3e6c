# frozen_string_literal: true

# The GPU image's own scripts (packer/scripts, copied into files/ by `invoke chef-attributes`), in the image's
# order and with its environment (plus this server's GPU count, and unattended upgrades off on workers); workers
# run them all, the gateway (a Kubernetes member for the pod routes, no jobs) the common ones plus the runtime,
# kubelet and flannel's prerequisites, other servers only the common ones. A script runs again only when its
# content or the versions change (the digest in its stamp file) -- and never under a running job: a joined
# worker with workload pods is cordoned (when an upgrade kubeconfig is provided) and the change waits for a
# converge when no job runs here.
scripts = node['cluster_node']['image_scripts']
dir = node['cluster_node']['image_scripts_dir']
upgrade = node['cluster_node']['upgrade']
worker = cluster_role?('worker')
names = if worker
          scripts['order']
        elsif cluster_role?('gateway')
          scripts['node']
        else
          scripts['common']
        end
# The site's AWS identity (site_credentials: Roles Anywhere) for the scripts that read the lab's ECR registry: the
# standard image's pre-pull and the kubelet's image credential provider (kubernetes.sh).
environment = scripts['environment'].to_h.merge(
  'EXPECTED_GPUS' => cluster_server['gpus'].to_s,
  'UNATTENDED_UPGRADES' => worker ? '0' : '1',
  'AWS_CONFIG_FILE' => node['cluster_node']['aws_config'],
  'AWS_PROFILE' => node['cluster_node']['aws_profile']
)

pending = ClusterNode::Upgrade.pending(names, scripts['digests'], dir)
joined = worker && ::File.exist?(upgrade['kubelet_kubeconfig'])
workload = if joined && !pending.empty?
             ClusterNode::Upgrade.workload_pods(shell_out('crictl', 'pods', '--state', 'ready', '-o', 'json').stdout)
           else
             []
           end
decision = ClusterNode::Upgrade.decision(pending: pending, joined: joined, workload: workload)
can_cordon = ::File.exist?(upgrade['kubeconfig'])
kubectl = ['kubectl', '--kubeconfig', upgrade['kubeconfig']]

if decision == :wait
  execute "cordon #{cluster_server_name} for #{pending.join(', ')}" do
    command [*kubectl, 'cordon', cluster_server_name]
    only_if { can_cordon }
    not_if { ::File.exist?(upgrade['cordon_marker']) }
    notifies :create, "file[#{upgrade['cordon_marker']}]", :immediately
  end

  file upgrade['cordon_marker'] do
    content "cordoned by Chef for #{pending.join(', ')}\n"
    action :nothing
  end

  log "#{pending.join(', ')} changed; not applied while #{workload.join(', ')} run here" do
    cordon = can_cordon ? 'cordoned' : "no #{upgrade['kubeconfig']}: not cordoned"
    message "#{cluster_server_name}: #{pending.join(', ')} changed and waits until no job runs here " \
            "(running: #{workload.join(', ')}); #{cordon}"
    level :warn
  end
  return
end

directory dir do
  owner 'root'
  group 'root'
  mode '0700'
  recursive true
end

driver_changed = pending.include?('nvidia-driver.sh') && ::File.exist?('/proc/driver/nvidia/version')

names.each do |name|
  path = ::File.join(dir, name)
  stamp = ::File.join(dir, ".#{name}.#{scripts['digests'][name]}.done")

  cookbook_file path do
    source "image_scripts/#{name}"
    owner 'root'
    group 'root'
    mode '0755'
  end

  # check.sh verifies every run, except right after a driver change: the new module loads at the next boot.
  next if name == 'check.sh' && driver_changed

  execute "image script #{name}" do
    command ['/bin/bash', path]
    environment environment
    live_stream true
    not_if { name != 'check.sh' && ::File.exist?(stamp) }
    notifies :create, "file[#{stamp}]", :immediately unless name == 'check.sh'
  end

  next if name == 'check.sh'

  file stamp do
    content "#{name} applied with #{environment.sort.map { |k, v| "#{k}=#{v}" }.join(' ')}\n"
    mode '0600'
    action :nothing
  end
end

reboot 'load the new NVIDIA driver' do
  reason 'cluster_node: the NVIDIA driver changed; check.sh runs after the reboot'
  action :request_reboot
  only_if { driver_changed }
end

execute "uncordon #{cluster_server_name}" do
  command [*kubectl, 'uncordon', cluster_server_name]
  only_if { ::File.exist?(upgrade['cordon_marker']) && can_cordon && !driver_changed }
  notifies :delete, "file[#{upgrade['cordon_marker']} (uncordoned)]", :immediately
end

file "#{upgrade['cordon_marker']} (uncordoned)" do
  path upgrade['cordon_marker']
  action :nothing
end
