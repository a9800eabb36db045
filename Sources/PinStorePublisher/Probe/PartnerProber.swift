import Foundation
import PinStore

/// What a probe needs to reach one partner and judge what it presents: the publication file's
/// partner entry, reduced to the connection.
package struct ProbeTarget: Sendable {
    /// The partner's DNS name (or IP address): resolved for the addresses to probe, and the name
    /// the presented chain must be valid for.
    package let host: String
    /// The TLS port.
    package let port: Int
    /// The server name sent in the TLS handshake (SNI); `host` unless the publication file says
    /// otherwise.
    package let serverName: String
    /// Where a presented chain must lead: the system store or the partner's PEM anchors.
    package let trustRoots: TrustRoots

    package init(host: String, port: Int, serverName: String? = nil, trustRoots: TrustRoots) {
        self.host = host
        self.port = port
        self.serverName = serverName ?? host
        self.trustRoots = trustRoots
    }
}

/// What one probe of one address saw.
package struct ProbeObservation: Sendable, Hashable, Codable {
    /// The address probed (`"127.0.0.1:8443"`): a partner behind several load balancers serves
    /// several certificates at once, each of which must stay pinned.
    package let address: String
    /// When the handshake happened.
    package let observedAt: Date
    /// The certificates the server presented, DER, leaf first, as sent (recorded whether or not
    /// they validate, so a refused chain can be staged for a person with what was seen).
    package let presentedChain: [Data]
    /// The chain from the leaf to the anchor when the presented chain validated for the host
    /// (OpenSSL, through `ChainValidator`); empty when it did not.
    package let validatedChain: [Data]
    /// Why the presented chain did not validate, in words; `nil` when it did.
    package let validationFailure: String?

    package init(address: String, observedAt: Date, presentedChain: [Data], validatedChain: [Data], validationFailure: String?) {
        self.address = address
        self.observedAt = observedAt
        self.presentedChain = presentedChain
        self.validatedChain = validatedChain
        self.validationFailure = validationFailure
    }
}

/// One address's answer to a probe.
package enum ProbeResult: Sendable, Hashable {
    /// A TLS handshake got as far as the server's certificates.
    case observed(ProbeObservation)
    /// No chain to judge came from `address` (refused, timed out, not TLS, a chain past the
    /// probe's limits, a name that does not resolve); `reason` says why.
    case unreachable(address: String, reason: String)
}

/// Probes a partner at every address its name resolves to. The real one connects over TLS
/// (`TLSPartnerProber`); tests may swap in their own, as long as at least one test per capability
/// goes through the real one.
package protocol PartnerProber: Sendable {
    /// One result per address `target.host` resolves to.
    func probe(_ target: ProbeTarget) async -> [ProbeResult]
}
