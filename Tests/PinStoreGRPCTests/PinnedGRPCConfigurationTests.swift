import Foundation
import GRPCNIOTransportHTTP2Posix
import NIOEmbedded
import NIOPosix
import NIOSSL
import PinStore
@testable import PinStoreGRPC
import PinStoreTesting
import Testing

/// What a pinned gRPC transport refuses when it is made, before any connection: a
/// configuration under which no host could be judged, or the pin check could not run.
@Suite struct PinnedGRPCConfigurationTests {
    /// A store that is never updated: these tests make transports, not connections.
    static func store() throws -> PinStore {
        let key = try TestListSigningKey()
        let configuration = PinStore.Configuration(
            serviceURL: URL(string: "https://127.0.0.1:9/pins")!, publicKey: key.publicKeyBase64,
            storageDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("pinstore-grpc-\(UUID().uuidString)"))
        return try PinStore(configuration: configuration)
    }

    @available(macOS 15.0, *)
    @Test func aUnixDomainSocketWithoutServerHostnameIsRefused() throws {
        let error = #expect(throws: PinnedGRPCError.self) {
            _ = try HTTP2ClientTransport.Posix(pinnedBy: try Self.store(), target: .unixDomainSocket(path: "/tmp/pinstore-grpc.sock"))
        }
        #expect(error?.code == .noHostName)
    }

    @available(macOS 15.0, *)
    @Test func severalAddressesWithoutServerHostnameAreRefused() throws {
        let error = #expect(throws: PinnedGRPCError.self) {
            _ = try HTTP2ClientTransport.Posix(pinnedBy: try Self.store(),
                                               target: .ipv4(pairs: [("127.0.0.1", 8443), ("127.0.0.2", 8443)]))
        }
        #expect(error?.code == .noHostName)
    }

    @available(macOS 15.0, *)
    @Test func aUnixDomainSocketWithServerHostnameIsPinnedForThatHost() throws {
        let name = try PinnedGRPCServerName(target: ResolvableTargets.UnixDomainSocket.unixDomainSocket(path: "/tmp/pinstore-grpc.sock"),
                                            serverHostname: "api.internal", authority: nil)
        #expect(name.host == "api.internal")
        _ = try HTTP2ClientTransport.Posix(pinnedBy: try Self.store(), target: .unixDomainSocket(path: "/tmp/pinstore-grpc.sock"),
                                           serverHostname: "api.internal")
    }

    @available(macOS 15.0, *)
    @Test func aUnixDomainSocketsAuthorityIsTheHostJudged() throws {
        let name = try PinnedGRPCServerName(target: ResolvableTargets.UnixDomainSocket.unixDomainSocket(path: "/tmp/s", authority: "api.internal:443"),
                                            serverHostname: nil, authority: nil)
        #expect(name.host == "api.internal")
    }

    @available(macOS 15.0, *)
    @Test func theTargetsDNSNameIsTheHostJudged() throws {
        let name = try PinnedGRPCServerName(target: ResolvableTargets.DNS.dns(host: "api.example.com", port: 8443),
                                            serverHostname: nil, authority: nil)
        #expect(name.host == "api.example.com")
        #expect(name.port == 8443)
    }

    @available(macOS 15.0, *)
    @Test func theAuthorityOverridesTheTargetsHost() throws {
        let name = try PinnedGRPCServerName(target: ResolvableTargets.IPv4.ipv4(address: "127.0.0.1", port: 8443),
                                            serverHostname: nil, authority: "api.example.com:8443")
        #expect(name.host == "api.example.com")
    }

    @available(macOS 15.0, *)
    @Test func aSingleIPv6AddressIsJudgedAsThatAddress() throws {
        let name = try PinnedGRPCServerName(target: ResolvableTargets.IPv6.ipv6(address: "::1", port: 8443), serverHostname: nil, authority: nil)
        #expect(name.host == "::1")
        #expect(PinnedGRPCServerName.stripPort("[::1]:8443") == "::1")
    }

    @available(macOS 15.0, *)
    @Test func aServerHostnameThatDisagreesWithTheAuthorityIsRefused() throws {
        var config = HTTP2ClientTransport.Posix.Config.defaults
        config.http2.authority = "other.example.com"
        let error = #expect(throws: PinnedGRPCError.self) {
            _ = try HTTP2ClientTransport.Posix(pinnedBy: try Self.store(), target: .ipv4(address: "127.0.0.1", port: 8443),
                                               serverHostname: "api.example.com", config: config)
        }
        #expect(error?.code == .conflictingHostNames)
    }

    @available(macOS 15.0, *)
    @Test func aServerHostnameThatCanNeverBeAHostIsRefused() throws {
        let error = #expect(throws: PinnedGRPCError.self) {
            _ = try HTTP2ClientTransport.Posix(pinnedBy: try Self.store(), target: .ipv4(address: "127.0.0.1", port: 8443),
                                               serverHostname: "https://api.example.com/")
        }
        #expect(error?.code == .invalidHostName)
    }

    /// No Network.framework here: `EmbeddedEventLoop` stands for NIOTransportServices' loops, a
    /// group on which NIOPosix's `ClientBootstrap` does not run (the property the refusal rests on).
    @available(macOS 15.0, *)
    @Test func anEventLoopGroupWhoseTLSIsNotSwiftNIOSSLIsRefused() throws {
        let loop = EmbeddedEventLoop()
        defer { try? loop.syncShutdownGracefully() }
        let error = #expect(throws: PinnedGRPCError.self) {
            _ = try HTTP2ClientTransport.Posix(pinnedBy: try Self.store(), target: .dns(host: "api.example.com"), eventLoopGroup: loop)
        }
        #expect(error?.code == .transportServicesCannotBePinned)
    }

    @available(macOS 15.0, *)
    @Test func nioPosixGroupsArePinnable() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        _ = try HTTP2ClientTransport.Posix(pinnedBy: try Self.store(), target: .dns(host: "api.example.com"), eventLoopGroup: group)
        _ = try HTTP2ClientTransport.Posix(pinnedBy: try Self.store(), target: .dns(host: "api.example.com"), eventLoopGroup: group.next())
    }

    @available(macOS 15.0, *)
    @Test func disabledCertificateVerificationIsRefused() throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = .none
        let error = #expect(throws: PinnedGRPCError.self) {
            _ = try HTTP2ClientTransport.Posix(pinnedBy: try Self.store(), target: .dns(host: "api.example.com"), tlsConfiguration: tls)
        }
        #expect(error?.code == .certificateVerificationDisabled)
    }

    @available(macOS 15.0, *)
    @Test func aTLSConfigurationBelowTheTransportMinimumsIsRefused() throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.maximumTLSVersion = .tlsv11
        let error = #expect(throws: PinnedGRPCError.self) {
            _ = try HTTP2ClientTransport.Posix(pinnedBy: try Self.store(), target: .dns(host: "api.example.com"), tlsConfiguration: tls)
        }
        #expect(error?.code == .transportMinimumUnreachable)
    }
}
