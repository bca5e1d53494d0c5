extension TransactionMachine {
    /// One store's step, in one byte, in the storage the machine's owner provides.
    struct Step: Equatable {
        private var bits: UInt8

        init() {
            bits = 0
        }

        var phase: Phase {
            // Every two-bit value is a phase.
            @inline(__always) get { unsafeBitCast(bits & 0b11, to: Phase.self) }
            @inline(__always) set { bits = bits & ~0b11 | newValue.rawValue }
        }

        /// How it ended, once finished (`.finished` until then, which is never read before).
        var ending: Ending {
            // Only `Ending` values are ever stored in these two bits.
            @inline(__always) get { unsafeBitCast((bits >> 2) & 0b11, to: Ending.self) }
            @inline(__always) set { bits = bits & ~0b1100 | newValue.rawValue << 2 }
        }

        /// Whether the middleware's `willDispatch` was called for it.
        var announced: Bool {
            @inline(__always) get { bits & 0b1_0000 != 0 }
            @inline(__always) set { bits = newValue ? bits | 0b1_0000 : bits & ~0b1_0000 }
        }

        /// Whether the store may have queued changes for its observers.
        var needsDelivery: Bool {
            @inline(__always) get { bits & 0b10_0000 != 0 }
            @inline(__always) set { bits = newValue ? bits | 0b10_0000 : bits & ~0b10_0000 }
        }

        /// Whether the transaction gave up on it while it was running.
        var wasGivenUp: Bool {
            @inline(__always) get { bits & 0b100_0000 != 0 }
            @inline(__always) set { bits = newValue ? bits | 0b100_0000 : bits & ~0b100_0000 }
        }
    }
}
