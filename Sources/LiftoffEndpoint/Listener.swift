import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Opens the endpoint's listening socket.
enum Listener {
    /// A listening socket on `address`, the address it is bound to, and the socket file's path.
    /// - Throws: ``EndpointError`` for an address that is refused or cannot be listened on.
    static func open(_ address: String, allowRemote: Bool) throws -> (Int32, String, String?) {
        if address.hasPrefix("/") { return try unixSocket(address) }
        guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) else {
            throw EndpointError(
                "\(LiftoffEndpoint.addressVariable)='\(address)' is not HOST:PORT (127.0.0.1:6060) or a unix socket's path.")
        }
        var host = String(address[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" { host = "127.0.0.1" }
        var v4 = in_addr()
        var v6 = in6_addr()
        let isV4 = inet_pton(AF_INET, host, &v4) == 1
        guard isV4 || inet_pton(AF_INET6, host, &v6) == 1 else {
            throw EndpointError("\(LiftoffEndpoint.addressVariable)='\(address)' does not name an IP address (give 127.0.0.1 or ::1).")
        }
        let loopback = isV4 ? (UInt32(bigEndian: v4.s_addr) >> 24) == 127 : host == "::1" || withUnsafeBytes(of: v6) { $0.dropLast().allSatisfy { $0 == 0 } && $0.last == 1 }
        guard loopback || allowRemote else {
            throw EndpointError(
                "\(LiftoffEndpoint.addressVariable)='\(address)' is not a loopback address: profiles would be open to the network. "
                    + "Set \(LiftoffEndpoint.allowRemoteVariable)=1 to allow it.")
        }
        let descriptor = socket(isV4 ? AF_INET : AF_INET6, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw EndpointError("No socket could be made: \(String(cString: strerror(errno))).") }
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        let (status, bound): (Int32, UInt16)
        if isV4 {
            var socketAddress = sockaddr_in()
            socketAddress.sin_family = sa_family_t(AF_INET)
            socketAddress.sin_port = port.bigEndian
            socketAddress.sin_addr = v4
            (status, bound) = bindAndName(descriptor, &socketAddress) { UInt16(bigEndian: $0.sin_port) }
        } else {
            var socketAddress = sockaddr_in6()
            socketAddress.sin6_family = sa_family_t(AF_INET6)
            socketAddress.sin6_port = port.bigEndian
            socketAddress.sin6_addr = v6
            (status, bound) = bindAndName(descriptor, &socketAddress) { UInt16(bigEndian: $0.sin6_port) }
        }
        guard status == 0, listen(descriptor, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw EndpointError("The endpoint could not listen on \(address): \(reason).")
        }
        return (descriptor, isV4 ? "\(host):\(bound)" : "[\(host)]:\(bound)", nil)
    }

    /// Binds `descriptor` to `address`; the status, and the port it is bound to (the system's choice for 0).
    private static func bindAndName<Address>(_ descriptor: Int32, _ address: inout Address, port: (Address) -> UInt16) -> (Int32, UInt16) {
        let size = socklen_t(MemoryLayout<Address>.size)
        let status = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, size) } }
        guard status == 0 else { return (status, 0) }
        var length = size
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) } }
        return (status, port(address))
    }

    /// A listening unix socket at `path`; a socket left there by an earlier run is replaced, any other file is not.
    private static func unixSocket(_ path: String) throws -> (Int32, String, String?) {
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: socketAddress.sun_path)
        guard path.utf8.count < capacity else {
            throw EndpointError("\(LiftoffEndpoint.addressVariable)='\(path)' is longer than a unix socket's path may be (\(capacity - 1) bytes).")
        }
        var status = stat()
        if lstat(path, &status) == 0 {
            guard status.st_mode & S_IFMT == S_IFSOCK else {
                throw EndpointError("\(path) exists and is not a socket: the endpoint will not replace it.")
            }
            unlink(path)
        }
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { bytes in
            for (index, byte) in path.utf8.enumerated() { bytes[index] = byte }
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw EndpointError("No socket could be made: \(String(cString: strerror(errno))).") }
        let bound = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(descriptor, 16) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw EndpointError("The endpoint could not listen on \(path): \(reason).")
        }
        chmod(path, 0o600)
        return (descriptor, path, path)
    }
}
