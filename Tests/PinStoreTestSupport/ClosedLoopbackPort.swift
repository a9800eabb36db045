import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A port on 127.0.0.1 that refuses connections for as long as this value lives.
///
/// A socket is bound to it and never listens, so a connection gets a reset (`ECONNREFUSED`) and
/// no other process can take the port meanwhile. A port freed by stopping a server can be taken
/// by anyone on a busy machine before the test connects (a "closed port" test once connected).
package final class ClosedLoopbackPort: Sendable {
    /// The port number.
    package let port: Int
    private let descriptor: Int32

    package enum Failure: Error {
        case socket(Int32)
    }

    package init() throws {
        #if os(Linux)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw Failure.socket(errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(descriptor, address, length) == 0 && getsockname(descriptor, address, &length) == 0
            }
        }
        guard bound else {
            let error = errno
            close(descriptor)
            throw Failure.socket(error)
        }
        self.descriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit {
        close(descriptor)
    }
}
