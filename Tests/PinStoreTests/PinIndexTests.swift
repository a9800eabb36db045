import Foundation
import Testing
@testable import PinStore

/// The index a store answers from: every pin of a name is found, no other name's pin is.
@Suite struct PinIndexTests {
    /// A 32-byte fingerprint made from `seed`, different for every seed.
    func fingerprint(_ seed: Int) -> Data {
        Data((0..<32).map { UInt8(truncatingIfNeeded: seed >> (($0 % 4) * 8)) &+ UInt8($0) })
    }

    func pins(_ index: PinIndex, _ host: String) -> [Data] {
        var found: [Data] = []
        index.forEachPin(matching: host) { pin in
            found.append(pin.fingerprint.data)
            return false
        }
        return found
    }

    @Test func everyOneOfManyNamesFindsItsOwnPinAndNoOther() {
        // Enough names that the table's buckets collide many times over.
        let count = 20_000
        let index = PinIndex(entries: (0..<count).map {
            FingerprintEntry(name: "host-\($0).example.com", fingerprint: fingerprint($0), expires: 4_102_444_799)
        })
        var wrong = 0
        for number in 0..<count where pins(index, "host-\(number).example.com") != [fingerprint(number)] { wrong += 1 }
        #expect(wrong == 0)
        #expect(index.pinCount == count)
    }

    @Test func aNameWithSeveralPinsKeepsThemAllInListOrder() {
        let index = PinIndex(entries: [
            FingerprintEntry(name: "a.example.com", fingerprint: fingerprint(1), expires: 4_102_444_799),
            FingerprintEntry(name: "b.example.com", fingerprint: fingerprint(2), expires: 4_102_444_799),
            FingerprintEntry(name: "A.example.com", fingerprint: fingerprint(3), expires: 4_102_444_799),
            FingerprintEntry(name: "a.example.com", fingerprint: fingerprint(4), expires: 4_102_444_799),
        ])
        #expect(pins(index, "a.example.com") == [fingerprint(1), fingerprint(3), fingerprint(4)])
        #expect(pins(index, "b.example.com") == [fingerprint(2)])
    }

    @Test func aNameThatIsAPrefixOrSuffixOfAPinnedNameFindsNothing() {
        let index = PinIndex(entries: [FingerprintEntry(name: "api.example.com", fingerprint: fingerprint(1), expires: 4_102_444_799)])
        #expect(pins(index, "api.example.co").isEmpty)
        #expect(pins(index, "api.example.comm").isEmpty)
        #expect(pins(index, "pi.example.com").isEmpty)
        #expect(pins(index, "").isEmpty)
    }

    @Test func aWildcardPinAppliesToOneLabelUnderItsParentOnly() {
        let index = PinIndex(entries: [
            FingerprintEntry(name: "*.example.com", fingerprint: fingerprint(1), expires: 4_102_444_799),
            FingerprintEntry(name: "www.example.com", fingerprint: fingerprint(2), expires: 4_102_444_799),
        ])
        #expect(pins(index, "www.example.com") == [fingerprint(2), fingerprint(1)])
        #expect(pins(index, "api.example.com") == [fingerprint(1)])
        #expect(pins(index, "a.b.example.com").isEmpty)
        #expect(pins(index, "example.com").isEmpty)
    }

    @Test func entriesComeBackAsTheListGaveThem() {
        let entries = [
            FingerprintEntry(name: "*.example.com", fingerprint: fingerprint(1), expires: 4_102_444_799),
            FingerprintEntry(name: "api.example.com", fingerprint: fingerprint(2), expires: 4_102_444_798, depth: 1),
            FingerprintEntry(name: "api.example.com", fingerprint: fingerprint(3), expires: 4_102_444_797, kind: .publicKey),
        ]
        #expect(Set(PinIndex(entries: entries).entries) == Set(entries))
    }

    @Test func anEmptyIndexFindsNothingAndSaysSo() {
        let index = PinIndex(entries: [])
        #expect(index.isEmpty)
        #expect(pins(index, "api.example.com").isEmpty)
        #expect(index.validPinCount(at: 0) == 0)
    }
}
