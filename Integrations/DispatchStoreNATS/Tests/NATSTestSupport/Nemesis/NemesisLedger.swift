public import DispatchStore
public import DispatchStoreJournal

/// The state the nemesis's replicas replicate: a value that depends on the order of every action
/// applied (the same actions in another order give another value), and their count.
public struct NemesisLedger: StateType, Codable, Equatable, Sendable {
    /// The actions' values, mixed in order.
    public var value: UInt64 = 0
    /// How many actions were applied.
    public var count = 0

    /// An empty ledger.
    public init() {}

    /// The ledger after `action`.
    public mutating func apply(_ action: NemesisAction) {
        guard case .mix(let token) = action else { return }
        value = (value &* 1_099_511_628_211) ^ Self.value(of: token)
        count += 1
    }

    /// A short text that two ledgers share only when they are equal: `count:value`.
    public var digest: String {
        "\(count):\(String(value, radix: 16))"
    }

    /// A 64-bit FNV-1a hash of `token`.
    static func value(of token: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in token.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0100_0000_01b3
        }
        return hash
    }
}

/// What a nemesis replica appends: a token no other append has.
public enum NemesisAction: ActionType, Codable, Equatable, StablyNamed {
    /// Mixes the token into the ledger.
    case mix(token: String)

    /// The name the stream's records give the type.
    public static let stableName = "Nemesis.Action"
}

/// The reducer of a ``NemesisLedger``.
public final class NemesisLedgerReducer: Reducer<NemesisLedger, NemesisAction> {
    /// Applies `action`.
    public override func reduce(_ action: NemesisAction, into state: inout NemesisLedger) {
        state.apply(action)
    }
}
