import Hummingbird
import LiftoffEndpoint

/// The running server's profiles as routes, where Go's `net/http/pprof` serves them:
/// `go tool pprof http://HOST:PORT/debug/pprof/profile?seconds=10` (CPU) or `/debug/pprof/wall`
/// (waits included). Each request samples every thread for its seconds (30 by default); nothing is
/// sampled between requests, and a second request meanwhile gets 409.
enum PprofRoutes {
    static func add(to router: Router<BasicRequestContext>) {
        for (path, wall) in [("/debug/pprof/profile", false), ("/debug/pprof/wall", true)] {
            router.get(RouterPath(path)) { request, _ -> Response in
                let asked = request.uri.queryParameters.get("seconds", as: Int.self) ?? 30
                do {
                    let data = try await LiftoffEndpoint.profile(seconds: asked > 0 ? asked : 30, wall: wall)
                    return Response(
                        status: .ok, headers: [.contentType: "application/octet-stream"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
                } catch let error as EndpointError {
                    // As Go's handlers answer: text, marked X-Go-Pprof so pprof shows it.
                    return Response(
                        status: .init(code: error.status), headers: [.contentType: "text/plain; charset=utf-8", .init("X-Go-Pprof")!: "1"],
                        body: .init(byteBuffer: ByteBuffer(string: error.description + "\n")))
                }
            }
        }
    }
}
