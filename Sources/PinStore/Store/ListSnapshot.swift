import Foundation

/// The list in force as every read sees it: one immutable value, replaced whole when the list
/// in force changes (``ListUpdater`` publishes what ``TrustedListState`` holds) and copied with
/// the next generation when a pin expires. A decision that reads it once gets the pins, the
/// `domainsConfig`, the CT section and the expiry of one list, under the generation that names
/// them: nothing can pair one list's pins with another list's sections.
///
/// A class (immutable, so sharing it is safe): a decision takes the whole snapshot with one
/// retain. As a struct, every decision copied its five sections out one by one, each copy
/// retaining every array and dictionary inside them (about 500 instructions per `matchPins`).
final class ListSnapshot: Sendable {
    /// The pins of the list in force (nil: none downloaded, loaded, or still trusted).
    let index: PinIndex?
    /// The server's per-domain switch that came with the list (challenge mode only).
    let domainsConfig: DomainsConfig?
    /// The signed Certificate Transparency section that came with the list.
    let certificateTransparency: CTLogList?
    /// The signed `revocations` section that came with the list.
    let revocations: ListRevocations?
    /// The signed `crl` section that came with the list.
    let crl: CRLHostList?
    /// The list's own `expires` (Unix seconds); `.max` when it has none.
    let expires: Int64
    /// When the list was downloaded (Unix seconds), for the age gauge.
    let updatedAt: Double?
    /// Bumped on every change of the list in force and when a pin expires, so whoever keeps
    /// trust derived from an older snapshot (pooled connections) checks it again.
    let generation: UInt64

    /// No list, generation 0: a store before its first list.
    static let none = ListSnapshot(nil, generation: 0)

    /// The snapshot of `list` (nil: none) under `generation`.
    convenience init(_ list: PinStore.StoredList?, generation: UInt64) {
        self.init(index: list?.index, domainsConfig: list?.domainsConfig, certificateTransparency: list?.certificateTransparency,
                  revocations: list?.revocations, crl: list?.crl, expires: list?.expires ?? .max, updatedAt: list?.updatedAt,
                  generation: generation)
    }

    /// A snapshot of these tables (a rule test or a benchmark builds one without a store).
    init(index: PinIndex?, domainsConfig: DomainsConfig?, certificateTransparency: CTLogList?, revocations: ListRevocations?,
         crl: CRLHostList?, expires: Int64 = .max, updatedAt: Double? = nil, generation: UInt64 = 0) {
        self.index = index
        self.domainsConfig = domainsConfig
        self.certificateTransparency = certificateTransparency
        self.revocations = revocations
        self.crl = crl
        self.expires = expires
        self.updatedAt = updatedAt
        self.generation = generation
    }

    /// The same list under the next generation (a pin expired).
    func nextGeneration() -> ListSnapshot {
        ListSnapshot(index: index, domainsConfig: domainsConfig, certificateTransparency: certificateTransparency,
                     revocations: revocations, crl: crl, expires: expires, updatedAt: updatedAt, generation: generation &+ 1)
    }
}
