import http.server, socketserver
PAGE=b"<!doctype html><html><head><title>Simple</title><style>body{font-family:sans-serif;background:#f4f4f4}</style></head><body><h1>Hello</h1><p>A simple page for the benchmark.</p></body></html>"
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header("content-type","text/html"); self.send_header("content-length",str(len(PAGE))); self.end_headers(); self.wfile.write(PAGE)
    def log_message(self,*a): pass
socketserver.ThreadingTCPServer.allow_reuse_address=True
with socketserver.ThreadingTCPServer(("127.0.0.1",18931),H) as s: s.serve_forever()
