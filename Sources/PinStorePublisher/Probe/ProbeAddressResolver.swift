import Foundation
import NIOPosix

/// One address a partner's name resolves to: an IP address (v4 or v6, as text) and a port.
package struct ProbeAddress: Sendable, Hashable, CustomStringConvertible {
    /// The IP address as text (`"127.0.0.1"`, `"2001:db8::1"`).
    package let ip: String
    /// The TCP port.
    package let port: Int

    package init(ip: String, port: Int) {
        self.ip = ip
        self.port = port
    }

    /// `127.0.0.1:443` or `[2001:db8::1]:443`: the form ``ProbeObservation/address`` records.
    package var description: String {
        ip.contains(":") ? "[\(ip)]:\(port)" : "\(ip):\(port)"
    }
}

/// Turns a partner's name into every address to probe. The system's resolver by default; tests
/// map a name to several ports on 127.0.0.1 (one server per "load balancer").
package protocol ProbeAddressResolver: Sendable {
    /// Every address `host` resolves to for `port`, IPv4 and IPv6, without duplicates, in the
    /// resolver's order.
    ///
    /// - Throws: ``ProbeAddressResolutionError`` when the name does not resolve.
    func addresses(for host: String, port: Int) async throws(ProbeAddressResolutionError) -> [ProbeAddress]
}

/// Why a partner's name gave no address to probe.
package struct ProbeAddressResolutionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The name that was looked up.
    package let host: String
    /// The resolver's words.
    package let detail: String

    package init(host: String, detail: String) {
        self.host = host
        self.detail = detail
    }

    package var description: String {
        "\(host) does not resolve: \(detail)"
    }
}

/// The system's resolver (`getaddrinfo`, on NIO's blocking-work thread pool so that a slow DNS
/// server holds no event loop): every IPv4 and IPv6 address, since a partner behind several
/// load balancers or a CDN may present a different certificate at each.
///
/// Addresses of a family this machine cannot reach are still returned (and then reported
/// unreachable by the probe): leaving them out would hide a certificate other vantage points see.
package struct SystemAddressResolver: ProbeAddressResolver {
    package init() {}

    package func addresses(for host: String, port: Int) async throws(ProbeAddressResolutionError) -> [ProbeAddress] {
        let outcome: Result<[ProbeAddress], ProbeAddressResolutionError>
        do {
            outcome = try await NIOThreadPool.singleton.runIfActive { Self.lookUp(host, port: port) }
        } catch {
            throw ProbeAddressResolutionError(host: host, detail: "the resolver's thread pool is not running (\(error))")
        }
        return try outcome.get()
    }

    /// `getaddrinfo` for TCP, every family; addresses read back as text with `getnameinfo`
    /// (no `sockaddr` layout in Swift, which differs between Glibc and Darwin).
    static func lookUp(_ host: String, port: Int) -> Result<[ProbeAddress], ProbeAddressResolutionError> {
        guard !host.isEmpty, !host.utf8.contains(0) else {
            return .failure(ProbeAddressResolutionError(host: host, detail: "the name is empty or holds a NUL character"))
        }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_protocol = Int32(IPPROTO_TCP)
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, nil, &hints, &list)
        guard rc == 0, let list else {
            return .failure(ProbeAddressResolutionError(host: host, detail: String(cString: gai_strerror(rc))))
        }
        defer { freeaddrinfo(list) }
        var addresses: [ProbeAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = list
        while let entry = cursor {
            cursor = entry.pointee.ai_next
            // NI_MAXHOST (1025): room for any numeric address with a scope.
            var text = [CChar](repeating: 0, count: 1025)
            guard getnameinfo(entry.pointee.ai_addr, entry.pointee.ai_addrlen, &text, socklen_t(text.count), nil, 0, NI_NUMERICHOST) == 0 else {
                continue
            }
            let address = ProbeAddress(ip: String(decoding: text.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self), port: port)
            if !addresses.contains(address) { addresses.append(address) }
        }
        guard !addresses.isEmpty else {
            return .failure(ProbeAddressResolutionError(host: host, detail: "the resolver answered with no address"))
        }
        return .success(addresses)
    }
}
