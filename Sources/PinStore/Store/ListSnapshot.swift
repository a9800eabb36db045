import Foundation

/// The list in force as every read sees it: one immutable value, replaced whole when the list
/// in force changes (``ListUpdater`` publishes what ``TrustedListState`` holds) and copied with
/// the next generation when a pin expires. A decision that reads it once gets the pins, the
/// `domainsConfig`, the CT section and the expiry of one list, under the generation that names
/// them: nothing can pair one list's pins with another list's sections.
struct ListSnapshot: Sendable {
    /// The pins of the list in force (nil: none downloaded, loaded, or still trusted).
    let index: PinIndex?
    /// The server's per-domain switch that came with the list (challenge mode only).
    let domainsConfig: DomainsConfig?
    /// The signed Certificate Transparency section that came with the list.
    let certificateTransparency: CTLogList?
    /// The signed `revocations` section that came with the list.
    private(set) var revocations: ListRevocations? = nil
    /// The signed `crl` section that came with the list.
    private(set) var crl: CRLHostList? = nil
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
    init(_ list: PinStore.StoredList?, generation: UInt64) {
        self.init(index: list?.index, domainsConfig: list?.domainsConfig, certificateTransparency: list?.certificateTransparency,
                  expires: list?.expires ?? .max, updatedAt: list?.updatedAt, generation: generation)
        revocations = list?.revocations
        crl = list?.crl
    }

    private init(index: PinIndex?, domainsConfig: DomainsConfig?, certificateTransparency: CTLogList?,
                 expires: Int64, updatedAt: Double?, generation: UInt64) {
        self.index = index
        self.domainsConfig = domainsConfig
        self.certificateTransparency = certificateTransparency
        self.expires = expires
        self.updatedAt = updatedAt
        self.generation = generation
    }

    /// The same list under the next generation (a pin expired).
    func nextGeneration() -> ListSnapshot {
        var next = ListSnapshot(index: index, domainsConfig: domainsConfig, certificateTransparency: certificateTransparency,
                                expires: expires, updatedAt: updatedAt, generation: generation &+ 1)
        next.revocations = revocations
        next.crl = crl
        return next
    }
}
