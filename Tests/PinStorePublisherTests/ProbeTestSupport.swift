import Foundation
import PinStore
import PinStoreDevServer
import PinStoreTesting
import PinStoreTestSupport
@testable import PinStorePublisher

/// A resolver that maps every name to ports on 127.0.0.1: one test server per "load balancer"
/// (tests never connect anywhere else).
struct LoopbackResolver: ProbeAddressResolver {
    let ports: [Int]

    init(_ ports: Int...) {
        self.ports = ports
    }

    init(ports: [Int]) {
        self.ports = ports
    }

    func addresses(for host: String, port: Int) async throws(ProbeAddressResolutionError) -> [ProbeAddress] {
        ports.map { ProbeAddress(ip: "127.0.0.1", port: $0) }
    }
}

/// A prober reaching `ports` on 127.0.0.1 whatever the name. Its timeout is a hang guard unless a
/// test is about it: a handshake with a loopback server took more than 10 s beside other builds
/// and a CPU hog, and the server was then reported unreachable.
func loopbackProber(_ ports: [Int], timeout: Duration = .seconds(Int64(HangGuard.seconds)),
                    configure: (inout TLSPartnerProber.Configuration) -> Void = { _ in }) -> TLSPartnerProber {
    var configuration = TLSPartnerProber.Configuration()
    configuration.timeout = timeout
    configure(&configuration)
    return TLSPartnerProber(configuration: configuration, resolver: LoopbackResolver(ports: ports))
}

extension TLSPartnerProber.Configuration {
    /// The defaults, with the hang guard as the timeout (``loopbackProber(_:timeout:configure:)``
    /// says why).
    static var hangGuarded: Self {
        var configuration = Self()
        configuration.timeout = .seconds(Int64(HangGuard.seconds))
        return configuration
    }
}

extension ProbeResult {
    /// The observation, or nil for an unreachable address.
    var observation: ProbeObservation? {
        if case .observed(let observation) = self { return observation }
        return nil
    }

    /// The reason, or nil for an observation.
    var unreachableReason: String? {
        if case .unreachable(_, let reason) = self { return reason }
        return nil
    }
}

/// A PEM block for one DER certificate (hostile servers' chains are assembled from these).
func pem(_ certificate: X509Certificate) -> String {
    let base64 = certificate.derRepresentation.base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
    return "-----BEGIN CERTIFICATE-----\n\(base64)\n-----END CERTIFICATE-----\n"
}

/// An https server on 127.0.0.1 presenting exactly `chainPEM` with `privateKeyPEM`: chains the
/// test kit would not make (too long, too large).
func startServer(chainPEM: String, privateKeyPEM: String) async throws -> ListServer {
    try await ListServer.start(port: 0, tls: ListServerTLS(certificateChainPEM: chainPEM, privateKeyPEM: privateKeyPEM)) { _ in
        ListServerResponse(status: 200, headers: [], body: Data())
    }
}
