#if canImport(FoundationNetworking)
import Foundation
import FoundationNetworking
import PinStore

/// The transports of the pinned configurations made in this process, by slot index (from 1).
///
/// A configuration made again for the same store and settings reuses its slot, so making
/// sessions repeatedly does not grow the registry. Entries live as long as the process, like
/// the protocol classes that refer to them.
enum PinnedSessionRegistry {
    struct Key: Hashable {
        let store: ObjectIdentifier
        let anchors: [Data]
        let includesSystemStore: Bool
        let updateOnEmpty: Bool
        let updateOnMismatch: Bool
        let requestTimeout: TimeInterval
        let maximumConnectionsPerHost: Int
        let limits: PinnedTransportLimits
    }

    private struct Entries {
        var transports: [PinnedHTTPSTransport] = []
        var slots: [Key: Int] = [:]
    }

    private static let entries = Locked(Entries())

    /// The slot of the transport for `key`, made by `make` the first time.
    static func slot(for key: Key, make: () -> PinnedHTTPSTransport) -> Int {
        entries.withLock { entries in
            if let slot = entries.slots[key] { return slot }
            entries.transports.append(make())
            let slot = entries.transports.count
            entries.slots[key] = slot
            return slot
        }
    }

    static func transport(at slot: Int) -> PinnedHTTPSTransport? {
        entries.withLock { entries in
            entries.transports.indices.contains(slot - 1) ? entries.transports[slot - 1] : nil
        }
    }

    /// The transport of a pinned configuration (for tests): the one its protocol class names.
    static func transport(of configuration: URLSessionConfiguration) -> PinnedHTTPSTransport? {
        for candidate in configuration.protocolClasses ?? [] {
            if let pinned = candidate as? any PinnedProtocolClass.Type { return transport(at: pinned.slotIndex) }
        }
        return nil
    }

    /// `PinnedHTTPSURLProtocol<S>` for the slot `index`.
    static func protocolClass(forSlot index: Int) -> AnyClass {
        func specialise<S: PinnedSessionSlot>(_ slot: S.Type) -> AnyClass { PinnedHTTPSURLProtocol<S>.self }
        return specialise(slotType(index))
    }

    /// The slot type whose ``PinnedSessionSlot/index`` is `index` (>= 1): its binary digits
    /// after the leading 1, spelled as nested generic types.
    static func slotType(_ index: Int) -> any PinnedSessionSlot.Type {
        guard index > 1 else { return SlotRoot.self }
        func zero<P: PinnedSessionSlot>(_ prefix: P.Type) -> any PinnedSessionSlot.Type { SlotZero<P>.self }
        func one<P: PinnedSessionSlot>(_ prefix: P.Type) -> any PinnedSessionSlot.Type { SlotOne<P>.self }
        let prefix = slotType(index / 2)
        return index % 2 == 0 ? zero(prefix) : one(prefix)
    }
}

/// A pinned protocol class, by the registry slot it serves.
protocol PinnedProtocolClass {
    static var slotIndex: Int { get }
}

/// A type standing for a registry slot number, so that each pinned configuration can name a
/// protocol class of its own (`PinnedHTTPSURLProtocol<Slot>`) without creating classes at run time.
protocol PinnedSessionSlot: SendableMetatype {
    static var index: Int { get }
}

/// Slot 1 (the leading binary digit).
enum SlotRoot: PinnedSessionSlot {
    static var index: Int { 1 }
}

/// `Prefix`'s number followed by a binary 0.
enum SlotZero<Prefix: PinnedSessionSlot>: PinnedSessionSlot {
    static var index: Int { Prefix.index * 2 }
}

/// `Prefix`'s number followed by a binary 1.
enum SlotOne<Prefix: PinnedSessionSlot>: PinnedSessionSlot {
    static var index: Int { Prefix.index * 2 + 1 }
}
#endif
