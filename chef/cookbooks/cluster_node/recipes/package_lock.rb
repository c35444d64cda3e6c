# frozen_string_literal: true

# The GPU image's package lock (build/ami/package-lock.json, through the attributes): the scripts install exactly
# the image's versions (/etc/cluster/package-lock) and apt prefers them for every dependency (preferences pin).
lock = node['cluster_node']['package_lock']
raise 'cluster_node: no package lock in the attributes; bake the image, then `invoke chef-attributes`' unless lock

directory ::File.dirname(node['cluster_node']['package_lock_file']) do
  mode '0755'
end

template node['cluster_node']['package_lock_file'] do
  source 'package-lock.erb'
  mode '0644'
  variables(lock: lock.to_h)
end

template '/etc/apt/preferences.d/90-cluster-package-lock' do
  source 'package-lock-preferences.erb'
  mode '0644'
  variables(lock: lock.to_h)
end
