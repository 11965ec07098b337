# Sourced by the benchmark scripts: start_nginx WORK starts nginx on 127.0.0.1 (a free port) serving
# WORK/www, logging each request's method, URI, status, body bytes and Range header to
# WORK/nginx/access.log, and stops it when the script exits. Sets $base (the server's URL) and
# $log (the access log).
start_nginx() {
  local work=$1 port
  mkdir -p "$work/www" "$work/nginx"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  cat >"$work/nginx/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
$( [ "$(id -u)" = 0 ] && echo "user root;" )
events {}
http {
  client_body_temp_path $work/nginx/cb; proxy_temp_path $work/nginx/p; fastcgi_temp_path $work/nginx/f;
  uwsgi_temp_path $work/nginx/u; scgi_temp_path $work/nginx/s;
  types {} default_type application/octet-stream;
  log_format bench '\$request_method \$uri \$status \$body_bytes_sent "\$http_range"';
  sendfile on;
  server { listen 127.0.0.1:$port; root $work/www; access_log $work/nginx/access.log bench; }
}
CONF
  /usr/sbin/nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" &
  nginx_pid=$!
  trap 'kill $nginx_pid 2>/dev/null || true' EXIT
  sleep 0.5
  base="http://127.0.0.1:$port"
  log="$work/nginx/access.log"
}
