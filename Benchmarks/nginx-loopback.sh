# Sourced by the benchmark scripts: start_nginx WORK starts nginx on 127.0.0.1 (a free port) serving
# WORK/www, logging each request's method, URI, status, body bytes and Range header to
# WORK/nginx/access.log; start_nginx_tls WORK starts a second one serving the same over https.
# Both stop when the script exits. Sets $base (the server's URL) and $log (the access log).

# run_nginx DIR SERVER_BLOCK [HTTP_LINES]: writes DIR/nginx.conf with SERVER_BLOCK (and HTTP_LINES
# in its http block), runs nginx from DIR in the background and waits a moment; stopped at exit.
nginx_pids=()
run_nginx() {
  local dir=$1 server=$2 extra=${3:-}
  mkdir -p "$dir"
  cat >"$dir/nginx.conf" <<CONF
daemon off; master_process off; worker_processes 1; pid $dir/nginx.pid;
error_log $dir/error.log;
$( [ "$(id -u)" = 0 ] && echo "user root;" )
events {}
http {
  client_body_temp_path $dir/cb; proxy_temp_path $dir/p; fastcgi_temp_path $dir/f;
  uwsgi_temp_path $dir/u; scgi_temp_path $dir/s;
  types {} default_type application/octet-stream;
  $extra
  sendfile on;
  $server
}
CONF
  /usr/sbin/nginx -c "$dir/nginx.conf" -p "$dir" &
  nginx_pids+=($!)
  trap 'kill "${nginx_pids[@]}" 2>/dev/null || true' EXIT
  sleep 0.5
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

start_nginx() {
  local work=$1 port
  mkdir -p "$work/www"
  port=$(free_port)
  run_nginx "$work/nginx" \
    "server { listen 127.0.0.1:$port; root $work/www; access_log $work/nginx/access.log bench; }" \
    "log_format bench '\$request_method \$uri \$status \$body_bytes_sent \"\$http_range\"';"
  base="http://127.0.0.1:$port"
  log="$work/nginx/access.log"
}

# start_nginx_tls WORK: a second nginx serving the same WORK/www over https (HTTP/2 offered) with a
# certificate for 127.0.0.1 from a throwaway CA made here with openssl. Sets $tls_base (its URL)
# and $ca (the CA's certificate, for --ca-file and curl --cacert).
start_nginx_tls() {
  local work=$1 port dir=$1/nginx-tls
  mkdir -p "$dir"
  if [ ! -f "$dir/server.pem" ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=bench CA" \
      -addext basicConstraints=critical,CA:TRUE -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
      -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1\n' >"$dir/ext"
    openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -days 2 \
      -extfile "$dir/ext" -out "$dir/server.pem" 2>/dev/null
  fi
  port=$(free_port)
  run_nginx "$dir" "server {
    listen 127.0.0.1:$port ssl http2; root $work/www; access_log off;
    ssl_certificate $dir/server.pem; ssl_certificate_key $dir/server.key;
  }"
  tls_base="https://127.0.0.1:$port"
  ca="$dir/ca.pem"
}
