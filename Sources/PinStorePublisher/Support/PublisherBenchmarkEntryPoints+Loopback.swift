import Foundation
import Logging
import PinStore

/// What the rotation-loop benchmark (`Benchmarks/`, `rotation-loop`) needs beyond the public
/// API: a publisher whose real TLS prober reaches its partners on 127.0.0.1 (a test network has
/// no DNS names for them, and an intercepted vantage point's path leads elsewhere), and a read
/// of how each published pin was decided. Reached only through
/// `@_spi(Benchmarks) import PinStorePublisher`; not part of the supported surface.
@_spi(Benchmarks)
extension PublisherBenchmarkEntryPoints {
    /// A publisher for `file`, as `Publisher(file:logger:)` makes it (the real `TLSPartnerProber`,
    /// the system clock, the file's folders and `reportEndpoint`), except that every partner name
    /// resolves to 127.0.0.1 at `probePorts`: this vantage point's network path.
    public static func loopbackPublisher(file: PublicationFile, probePorts: [Int], logger: Logger? = nil) throws -> Publisher {
        let prober = TLSPartnerProber(resolver: FixedResolver(addresses: probePorts.map { ProbeAddress(ip: "127.0.0.1", port: $0) }))
        return try Publisher(file: file, prober: prober, logger: logger)
    }

    /// The pins `publisher` last published, with how each was decided (`"observed"`: K sightings
    /// over T; `"agreement"`: seen by `threshold` vantage points in one round; `"approved"`).
    public static func publishedPins(of publisher: Publisher) async -> [(pin: String, source: String)] {
        await publisher.state.publishedPins.map { ($0.value, $0.source) }
    }
}
