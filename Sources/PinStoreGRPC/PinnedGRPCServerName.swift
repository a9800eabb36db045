import GRPCNIOTransportHTTP2Posix
import PinStore

/// The one host name a pinned gRPC transport judges every connection for, decided when the
/// transport is made (swift-nio-ssl's verification callback is fixed per transport and is not
/// told which name a connection was opened for, so the name cannot come later).
///
/// In order: `serverHostname` when given; else the host of `config.http2.authority`, the name
/// gRPC itself then sends in SNI and `:authority`; else the target's host (a DNS name, or the
/// single IPv4 or IPv6 address, or a Unix domain socket's authority). Anything else (a Unix
/// domain socket without an authority, a virtual socket, several addresses, a custom target)
/// names no host: refused rather than judged against a guess.
@available(macOS 15.0, *)
struct PinnedGRPCServerName: Sendable, Equatable {
    /// The host as written (an IPv6 address without brackets), for failures and logs.
    let host: String
    /// The host as the verifier and the pins take it, made once here at the adapter's edge.
    let name: HostName
    /// The TCP port the target names, for pin-failure reports.
    let port: Int?

    init(target: any ResolvableTarget, serverHostname: String?, authority: String?) throws(PinnedGRPCError) {
        let fromTarget = Self.targetHost(target)
        port = fromTarget?.port
        let authorityHost = authority.map(Self.stripPort)
        if let serverHostname, let authorityHost, try Self.hostName(serverHostname) != Self.hostName(authorityHost) {
            throw .conflictingHostNames(serverHostname: serverHostname, authority: authority ?? "")
        }
        guard let chosen = serverHostname ?? authorityHost ?? fromTarget?.host else { throw .noHostName }
        name = try Self.hostName(chosen)
        host = Self.unbracketed(chosen)
    }

    /// The host and port of a DNS target or of a one-address IP target.
    private static func targetHost(_ target: any ResolvableTarget) -> (host: String, port: Int?)? {
        switch target {
        case let dns as ResolvableTargets.DNS:
            return (dns.host, dns.port ?? 443)
        case let ipv4 as ResolvableTargets.IPv4 where ipv4.addresses.count == 1:
            return (ipv4.addresses[0].host, ipv4.addresses[0].port)
        case let ipv6 as ResolvableTargets.IPv6 where ipv6.addresses.count == 1:
            return (ipv6.addresses[0].host, ipv6.addresses[0].port)
        case let socket as ResolvableTargets.UnixDomainSocket:
            // Its authority, when set, is the name gRPC gives the service; without one, gRPC
            // uses the socket's path, which no certificate names.
            return socket.authority.map { (stripPort($0), nil) }
        default:
            return nil
        }
    }

    /// `name` as PinStore compares hosts; throws when it can never be one.
    private static func hostName(_ name: String) throws(PinnedGRPCError) -> HostName {
        do {
            return try HostName(unbracketed(name))
        } catch {
            throw .invalidHostName(name)
        }
    }

    private static func unbracketed(_ name: String) -> String {
        name.hasPrefix("[") && name.hasSuffix("]") ? String(name.dropFirst().dropLast()) : name
    }

    /// An authority's host: `host:port` and `[v6]:port` lose the port; a bare IPv6 address
    /// (several colons, no brackets) is kept whole.
    static func stripPort(_ authority: String) -> String {
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            return String(authority[authority.index(after: authority.startIndex)..<close])
        }
        let parts = authority.split(separator: ":", omittingEmptySubsequences: false)
        if parts.count == 2, !parts[1].isEmpty, parts[1].allSatisfy(\.isNumber) {
            return String(parts[0])
        }
        return authority
    }
}
