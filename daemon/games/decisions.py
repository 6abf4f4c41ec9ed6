"""Our readings of rule text that admits more than one. Rendered into docs/games.md; tested."""

from daemon.games.model import Decision

TEN_VALUE = Decision(
    "D1", "RWS 3.2.2, MBS 3.3.2",
    "RWS gives a ten its face value (10); MBS gives it 0. Do the games differ?",
    "A ten counts 0 in every game.",
    "Point Totals are taken modulo 10 (RWS 1.23, MBS 3.4.2), so 10 and 0 give the same total, "
    "and the Table of Play's Player third-card columns run 0-9, where a ten is 0.",
)
PAIR_SAME_RANK = Decision(
    "D2", "RWS 1.21, 1.33, 3.2; MBS 1.1.14, 1.1.14.3, 3.3, 4.2",
    "MBS defines a pair as 'the same point value or the same face cards'. Is T-K (both worth 0) "
    "a pair? Is 10-10? And when are two pairs a Twin Tiger Pair: RWS 1.33 says 'of the same "
    "value', MBS 1.1.14.3 'of the same value or same face cards'?",
    "A pair is two cards of the same rank, in every game: 10-10, K-K, 7-7 are pairs; T-J, T-K, "
    "K-Q are not; suits are ignored. The Twin differs per document. RWS (Tiger Buffalo, "
    "Appendix P): the two pairs have the same value as RWS 3.2 defines it, so a pair of a rank "
    "twins that rank, and J-J, Q-Q and K-K (each card worth 0, 3.2.3) twin one another, while "
    "a pair of tens (each worth its face value 10, 3.2.2) twins only tens: house edge 14.52% "
    "at 8 decks (Twin in 0.0580% of rounds). MBS: the two pairs have the same rank, so face-"
    "card pairs are a Twin only as the same face cards: house edge 16.12% (Twin in 0.0380%). "
    "The RWS Twin is a table setting, [table] twin_tiger_pair: \"value\" (the reading above, "
    "the default) or \"rank\" (as MBS: J-J twins only J-J, 16.12%); the par sheet gives "
    "the house edge of each, and every result names the reading it was settled under "
    "(rules).",
    "Pair: MBS itself says non-identical face cards (KQ, KJ, QJ) are no pair although they "
    "share the point value 0, and RWS's examples (10, 10 or K, K) pair by rank. Read "
    "literally, MBS 1.1.14 would also pair T-J, T-Q and T-K (same point value 0, not two face "
    "cards), and that gives Players an edge of 26.66% on Tiger Pair (8 decks, a Twin then "
    "only for four cards of one rank; more with any wider Twin): no approved game means that, "
    "so the pair half stands. Twin, RWS: 1.33 defines the Twin by 'the same value', a term "
    "RWS 3.2 defines; the pay table's 'have the same pair' is a row label, not a definition. "
    "Where approved text reads two ways and neither is absurd, a regulator settles a dispute "
    "for the Player who relied on the defined term, against the operator who drafted it. "
    "Reading 'value' as the Point Total instead (every ten and picture 0, so 10-10 against "
    "K-K too) is not what 3.2.2 says; it would give 12.92%; pairing by rank gives 16.12%. "
    "Twin, MBS: 1.1.14.3 repeats the two tests of its Pair definition, point value for "
    "numbered cards and identity for face cards ('same face cards', 'two pairs of Q's'), and "
    "1.1.14 says face cards that share the value 0 but are not identical do not match; the "
    "pay table's example is four tens. Numbered cards of the same point value have the same "
    "rank, so the Twin is by rank. The point-value reading (10-10, J-J, Q-Q, K-K all alike) "
    "would make 'or same face cards' say nothing, and gives 12.92%. Why a setting (issue "
    "23): two independent readings of RWS 1.33 with its pay table ('Player and Banker have "
    "the same pair') came out by rank. Where approved text reads two ways and neither is "
    "absurd, which one the operator's approval means is for the house and its regulator to "
    "say, not for the controller to fix in code; what the controller owes is to settle "
    "exactly by the reading configured and say which it was. MBS has no setting: its text "
    "reads one way.",
)
WU_DALANG = Decision(
    "D3", "RWS Tiger Buffalo 1.36; Insurance Plus 1.30",
    "'A side Bet placed on the Player Hand that wins with a Point Total of 1': must the Player "
    "Hand win, or only total 1?",
    "The Player Hand must win with a Point Total of 1, which means the Banker Hand has 0.",
    "The sentence's verb is the hand winning, like Big Buffalo and Player Big 7. The par sheet "
    "confirms it: at 150 to 1 the winning reading has a house edge of 25.6% (8 decks), while "
    "'the Player totals 1' happens in 7.45% of rounds and would give players an edge of about "
    "1,000%.",
)
CHAR_SIU_CARDS = Decision(
    "D4", "RWS 1.3, 1.20, 4.1.13",
    "Char Siu pays 'based on the total number of cards'. Which cards?",
    "All cards of both hands: 4, 5 or 6.",
    "1.3 and 1.20 say 'the total number of cards in Banker Hand and Player Hand'.",
)
BANKER_ON_SIX = Decision(
    "D5", "RWS 1.15, 4.1.1",
    "Does 'Banker wins on 6 points' (pays 1 to 2) include a three-card six?",
    "Yes: any Banker win with a Point Total of 6, on two or three cards.",
    "1.15 says 'when the Banker wins on 6 points' with no card count; the Tiger bets, "
    "which do care, say so explicitly.",
)
DECIDED_BETS = Decision(
    "D6", "RWS 5.4, MBS 5.17, Tai Sai 5.4",
    "When has 'an outcome been established i.e. any of the available Bets has conclusively won "
    "or lost'?",
    "When at least one bet offered on the table's layout has the same result (win, lose or "
    "push) for every way the deal could still go on under the Table of Play, taking every rank "
    "as still available. Insurance bets are not counted: they are offered during the round.",
    "'Available Bets' are those the layout offers. Treating every rank as available is the "
    "cautious reading: an outcome is never called established because of a card count the "
    "dealer cannot see.",
)
MBS_TIE_PUSH = Decision(
    "D7", "MBS 3.16.1",
    "On a Tie, do Player and Banker wagers lose?",
    "No: they are returned (push), and the Tie wager wins; Tiger Tie only on a tie of six.",
    "3.16.1: 'The initial wagers on Player and Banker do not win or lose in this case'.",
)
INSURANCE_WINDOWS = Decision(
    "D8", "RWS Insurance Plus 1.12, 3.12, 4.1.8",
    "Is a row of the Insurance Plus Pay Table offered when no further card will be drawn "
    "(e.g. Player 5 + a ten as third card, so 5 after three cards, and Banker 4, who draws "
    "only on a Player third card of 2-7 and so stands)?",
    "No. A window opens only when the Table of Play requires another card: after four cards if "
    "either hand draws, after the Player's third card only if the Banker draws. Within an open "
    "window every row as printed is offered, including rows that can only win by the tie "
    "exceptions of 4.2.1.",
    "1.12 defines Insurance as offered 'before either the Player Hand or Banker Hand or both "
    "Hands goes into the third card'. When no card follows, the round is decided and an "
    "insurance bet could only lose.",
)
INSURANCE_SETTLEMENT = Decision(
    "D9", "RWS Insurance Plus 3.11, 3.17, 4.2.1",
    "How is an insurance bet settled?",
    "It wins at its row's odds when the insured hand loses, loses when the insured hand wins, "
    "and is returned on a Tie, except the two scenarios of 4.2.1, where it wins.",
    "3.11 'paid ... when the Player Hand or Banker Hand loses'; 3.17 and 4.2.1 for ties.",
)
FOUR_NUMBER = Decision(
    "D10", "Tai Sai 4.1.2, 4.1.3",
    "Four Number Combination: 'wins when three of the numbers in the four number combination "
    "matches the numbers on the dice'. Does 6-6-5 win 6 5 4 3?",
    "No. The three dice must show three different numbers, all within the combination.",
    "Three of the four numbers must match the dice, which needs three different numbers. "
    "Pay Table 2 lists only four combinations and Pay Table 3 fifteen: both are kept as printed.",
)
DOUBLE_SINGLE_AS_PRINTED = Decision(
    "D11", "Tai Sai 4.1.2, 4.1.3",
    "The Double Numbers With Single Dice list has 28 combinations; 1-1-2 and 6-6-5 are missing.",
    "The list is kept exactly as printed: there is no double_single_1_1_2 or double_single_6_6_5 "
    "bet, so nothing wins on those throws under this bet type.",
    "The approved document governs. A layout without the bet box cannot take the bet.",
)
TRIPLE_RULE = Decision(
    "D12", "Tai Sai 3.10",
    "On a triple, 'only the following Bets shall win'. Which bets does that take away?",
    "Applied as a filter after each bet's own condition: on a triple only Specific Triple, Any "
    "Triple, Double Dice, Single Dice and Total Sum bets can win. Small, Big, Odd and Even "
    "already exclude triples; no other bet type can match a triple.",
    "The clause is encoded once as data and tested over all six triples.",
)
TAI_SAI_LAYOUTS = Decision(
    "D13", "Tai Sai 2.1.1",
    "Which appendices are playable layouts?",
    "A (Pay Table 1), C (Pay Table 2) and E (Pay Table 3). B, D and F only show where bets are "
    "placed and are rejected as layouts.",
    "2.1.1. Layout labels that contradict the pay tables (e.g. 'ANY TRIPLE 1 WINS 3', "
    "'Big: 8 to 17') are extraction errors; the numbered pay tables govern.",
)

SEEN_BY_THE_PIT = Decision(
    "D14", "RWS 5.5.3, 5.13 (Insurance Plus 5.12); MBS 5.7.1, 5.8.2, 5.12; every game's "
           "void clauses",
    "Which irregularities can the controller see, and how does the pit void a round under a "
    "clause the controller cannot see?",
    "Seen by the pit, not the controller: a hand dealt an incorrect number of cards (RWS "
    "5.5.3), 'any dealing error not described in 5.5' (RWS 5.13, IP 5.12), cards passed to "
    "the wrong Player, dealt face up or exposed by the Dealer (MBS 5.7.1), whether the order "
    "of a double draw can be ascertained (MBS 5.8.2.1, 5.8.2.2) and everything of Method C "
    "(MBS 5.12). The controller still raises what it does see: every double draw (MBS 5.8, "
    "RWS 5.11), a card leaving the shoe face up, an excess card. The pit voids a round under "
    "the clause it saw with void_round's 'irregularity', which must name a cause that voids "
    "a round in that game's document; without it the void is 'anything else' (RWS 5.18, MBS "
    "6.1, Tai Sai 5.14).",
    "The controller assigns every card to its hand by draw order and the Table of Play, so "
    "its own record of a hand never has the wrong number of cards; where the physical card "
    "lands, and which way up the Dealer turns it, only people and surveillance see. The shoe "
    "reports that two cards left together, not in which order (firmware_protocols/shoe.md): "
    "the reader's order is a reconstruction, and only the pit can say it cannot be trusted. "
    "A void under the clause that applies is what settlement and the auditors need; a void "
    "always under 'anything else' would hide it.",
)
INSURANCE_NOT_OFFERED = Decision(
    "D15", "RWS Insurance Plus 5.3, 5.13",
    "The controller announces every insurance window. How can it tell that the Dealer "
    "neglected to offer Insurance?",
    "The Dealer offers insurance, then closes the window with close_insurance; only then is "
    "the next card announced. A card drawn while the window is still open is taken as "
    "insurance not offered: the window closes (5.3) and the controller raises 5.13.1 "
    "(insurance_not_offered_before_outcome) if the outcome of the Player and Banker bets is "
    "not yet established after that card, or 5.13.2 (insurance_not_offered_after_outcome) "
    "if it is: the round is complete, or both bets have the same result for every way the "
    "deal can go on. Play continues; the Pit Manager acts as 5.13 says.",
    "Closing the window is the Dealer's statement that insurance was offered; a card drawn "
    "past an open window is the only trace the controller has of a Dealer who skipped it, "
    "and it is noticed when the card is drawn. 5.13 has no 'i.e.' defining the outcome, as "
    "RWS 5.4 has (D6); read with D6, every window would already have an outcome (Small "
    "Tiger and Small Buffalo are lost once either hand draws), leaving 5.13.1 no case at "
    "all. Insurance insures the Original Bet on the Player or Banker Hand (1.12, 5.13.1 "
    "caps the payout at it), so it is their outcome that counts.",
)
DEVICE_RESET = Decision(
    "D16", "MBS 5.9, 5.2, 5.6, 5.7, 5.7.1, 5.8",
    "A Dealer error needs the dealing device reset after \"No more bets\". What happens to "
    "the round and to cards already drawn?",
    "The reset_dealing_device command (Tiger Baccarat only) reopens betting in the same round "
    "and raises device_reset (5.9) so that players are offered the withdrawal of their "
    "wagers and may bet again. Cards drawn before the reset stay in the deal, in the order "
    "they were drawn, and the deal continues after the re-announced \"No more bets\"; the "
    "shoe gate stays locked until then. If the reset altered the order of the cards so that "
    "it cannot be reconstructed, the Pit voids the round under 5.2 (order_altered).",
    "5.9 says what happens to the wagers, nothing of the cards, and no MBS clause sets a "
    "drawn card aside: the document keeps cards in play through exposure (5.2 'regardless "
    "of whether the cards have been exposed', 5.6, 5.7.1, 5.12.1), reconstructs their order "
    "(5.7, 5.8) and voids only when the order 'cannot be reconstructed' (5.2). The "
    "controller's draw record reconstructs the cards it read; whether the device's own order "
    "survived the reset, only the Pit can see. (This replaces an earlier reading that set the "
    "drawn cards aside; a journal written under it is still read that way.) Re-read for "
    "issue 23, betting reopened while drawn cards stay in the deal: it stands, and a card "
    "exposed before the reset is the Pit's. A card drawn face down and unseen tells a new "
    "wager nothing the shoe's next card would not, so reopening betting over it costs the "
    "house nothing. A card exposed in error stays in play (5.7.1: 'the outcome shall "
    "stand'; 5.2 'regardless of whether the cards have been exposed'), and a wager placed "
    "knowing it is another game: at 8 decks, with one card of the deal known, some wager "
    "the layout offers has the players' edge in 50 of the 52 cases (its place in the deal "
    "by its rank); the Banker's first card a 6 gives Small Tiger a players' edge of "
    "179.58%, the Player's first card a 9 gives Player 21.53%. No clause resolves a wager "
    "on a card already exposed (5.9 only gives the opportunity to wager; 5.4 and 5.5 are "
    "about wagers after \"No more bets\"), so it is the Gaming Shift Manager's (6.1): "
    "the Pit, who sees what was exposed (D14), voids the round with void_round "
    "(unresolved_irregularity) before the re-announced \"No more bets\". Setting the "
    "cards aside instead is not open to the controller: 5.2 keeps them in play.",
)

DOUBLE_DRAW_HELD = Decision(
    "D17", "RWS 5.11 (Insurance Plus 5.10); MBS 5.8, 5.8.1, 5.8.2",
    "Two or more cards left the shoe together. The reader gives an order; who decides it, "
    "and when is the round settled?",
    "A round with a double draw is not settled when its deal completes: the controller "
    "records result_held with the order as read, locks the gate and raises "
    "simultaneous_draw. The Pit then gives confirm_order: as read (the reconstruction, MBS "
    "5.8), or with swap naming two draw numbers of the round (the order the Pit Manager "
    "determined, MBS 5.8.2.2), or void_round (during the initial deal with the order "
    "unknown, MBS 5.8.2.1). The Pit's order stands however it changes the deal: a card the "
    "deal then no longer takes is carried to the next deal (RWS 5.8), a deal that then "
    "needs more cards goes on; the pair's other card, read once the deal was complete as "
    "read, may be named in the swap, and voiding the round closes it with the round. The "
    "answer names the hold (hold_id). A hold survives a restart.",
    "RWS 5.11 makes the double draw a dealing error with the Players' options of 5.13, "
    "and MBS 5.8.1 lets Players withdraw before the reconstruction and 5.8.2.2 gives the "
    "order to the Pit Manager. A result settled at once from the reader's order would "
    "reach settlement before any of that happened, and could be the wrong one.",
)

READS_HELD = Decision(
    "D18", "RWS 5.8, 5.18 (Insurance Plus 5.7, 5.17); MBS 5.8, 6.1",
    "The shoe reports a draw the controller cannot trust: a draw number that skips (a read "
    "lost on the line), a draw number repeated with another card, a card read as '??' or as "
    "no card at all, or a read below the table's confidence floor ([table] "
    "card_confidence_floor, 80% unless configured). An exact repeat (same draw number, same "
    "card) arrives too, when a device re-sends after a link reset. What is dealt, and when "
    "is the round settled?",
    "An exact repeat is journalled (draw_repeated) and ignored: one card left the shoe, "
    "once. Anything else untrustworthy is never dealt on a guess: the controller records "
    "result_held (reason 'reads', with every draw of the round as read, null where no "
    "trustworthy read exists), locks the gate and raises the Pit's clause (RWS 5.18, MBS "
    "6.1). The Pit's paths: reconstruct_deal with the round's cards in the order dealt "
    "(each checked: a card of the set, no more copies than the shoe holds, the same card "
    "as every trustworthy read at its draw, and taken by the Table of Play in that order), "
    "after which dealing goes on or the round is settled; or void_round. Every hold has its "
    "own id (hold_id), which the Pit's answer names: a second answer to one hold, or an "
    "answer when nothing is held, is refused. A deal that waits for a card already on the "
    "table (the last card's read lost) is first held by the Pit (hold_round), then "
    "reconstructed. A read that arrives while the round is held is checked like any other. "
    "A card drawn while a result is held is carried to the next deal (RWS 5.8, IP 5.7), "
    "unless the reconstruction puts it in the held deal, where it keeps its draw number; a "
    "carried card without a trustworthy read holds that deal at once, and an unread draw "
    "that opens a deal may be said ('--') to be the previous round's. A draw number no "
    "draw has is the next draw, unread, in the round it left the shoe in. The draw a voided "
    "deal was waiting for, if its read comes after the void, may be that deal's card or "
    "the next deal's: it is carried unread, and the Pit's '--' places it. Cards that left "
    "the shoe together bind a reconstruction only as a pair. A hold survives a restart; a "
    "restart judges a held deal by its reads once all of them are trustworthy. A double "
    "draw keeps its own path (D17: confirm_order).",
    "A lost read followed by the next card dealt by position settled a physical 9-9 tie "
    "(9S 2H AS KD 9C 7C, draw 3 lost) as a Player win; a draw delivered twice was dealt "
    "twice. 5.5.1 is about cards not of the set, and an unreadable card is no evidence of "
    "one; RWS 5.8 gives the Reconstruction of cards drawn in excess or exposed to the House, "
    "and 5.18 everything the rules do not resolve to the Shift Manager. The Pit sees the "
    "cards on the table; the controller checks what it says against every fact it has.",
)
OUT_OF_RANGE = Decision(
    "D19", "RWS 5.18, MBS 6.1, Tai Sai 5.14",
    "A device reports a value outside the documented range of its field (a die showing 7, "
    "a confidence of 200%, a draw number 0). What happens?",
    "The driver checks every field of every device message against its range "
    "(firmware_protocols, @limits beside each message) before anything acts on it. A value "
    "outside is journalled as an alert (device_value_out_of_range) with the raw frame; the "
    "device session stays up. A card so reported is a card without a trustworthy read "
    "(D18); a throw so reported has no outcome: the Pit voids the round or a new throw "
    "follows (Tai Sai 5.14), as for an unread die.",
    "An exception raised by such a value restarted the device session: the message was "
    "gone, nothing was journalled and the round waited forever. A value no device may send "
    "is a fact about the device, and the round it touches is the Pit's.",
)
MBS_LAYOUT_H = Decision(
    "D20", "MBS 2.2, Appendices G and H",
    "How many playing positions has Appendix H? The text gives H no caption; the diagram "
    "note under G's caption ('1 to 8 playing positions') says 'The table is numbered 1 "
    "through 9'.",
    "The count for H is not printed, so none is recorded: H is a layout (2.2) with every "
    "wager, and its position count is left to the approved diagram. G keeps '1 to 8'.",
    "Every other appendix has its caption and then its (lost) diagram, so the note that "
    "follows G's caption describes G's diagram, not H's. It does not contradict G's count: "
    "eight positions numbered 1 through 9 is how tables that leave out one number (often "
    "4) are numbered, and Appendix D's '1 to 9 playing positions' is printed where nine "
    "are meant. Settlement does not depend on the count: 2.2 offers every wager on every "
    "layout.",
)
TAI_SAI_THROW = Decision(
    "D21", "Tai Sai 3.6, 3.7, 3.8, 5.5.1, 5.5.2, 5.5.3, 5.14",
    "The tumbler reports an activation (with its own armed flag), each tumble (with its own "
    "count) and the dice at rest (with flat flags and a read confidence). Which of these "
    "does the controller trust, and which throws are a round's result?",
    "A throw is a result only if it belongs to the open round after \"No more Bets\", "
    "follows an arm the tumbler confirmed (its answer to the Arm command, which may be read "
    "just after the activation) and an activation seen in that armed play. The controller "
    "counts the tumbles itself: one per Tumble message after that activation, whatever "
    "count the message carries; the tumbler's count is only cross-checked. A flat flag is "
    "flat only if it is 1 and the tilt is within the limit; a value out of range (a flag of "
    "2, a die of 7) is D19. 5.5.3, 5.5.1 and 5.5.2 void first, as they need no one's "
    "judgement: an unreadable die after two tumbles is a 5.5.1 void; but fewer tumbles "
    "than the tumbler numbered (Tumble messages lost: count 3 arriving alone) prove no "
    "5.5.1, and go to the Pit. Then the Pit decides (5.14): an arm never confirmed, an "
    "activation the tumbler reports as disarmed after \"No more Bets\" (not 5.5.3, which is "
    "about activation before it), dice settled with no activation, the tumbler's count "
    "disagreeing with the controller's, an unreadable die or one out of range (D19), or a "
    "read under the table's floor ([table] dice_confidence_floor, 90% unless configured; "
    "0% is never a result). Such a throw is held (throw_held, with a hold id) and the "
    "tumbler disarmed; it stays held through tumbler reconnects and restarts, and nothing "
    "the tumbler reports is a throw of the round until the Pit answers: void_round, or "
    "throw_again, which re-arms and needs a new confirmed arm. An answer may name the hold "
    "(hold); one naming a hold already answered, or none open, is refused. An event outside "
    "a live exchange voids and settles nothing; it is journalled and alerted: an "
    "activation, tumble or settle while no round is open; during betting, an activation the "
    "tumbler reports as armed (the table disarmed it at open_betting: an earlier round's "
    "event re-sent, or a disarm it missed), tumbles with no activation of the round, and "
    "dice settling with none. Only an activation the tumbler reports as disarmed during "
    "betting voids the round under 5.5.3.",
    "Trusting the device's counter made one Tumble message with count 3 three tumbles, and "
    "with count 255 two hundred and fifty-five, where 5.5.1 asks for at least three: one "
    "physical tumble passed as a valid throw. Three Tumble messages with no activation, a "
    "flag of 2 read as flat, a confidence of 0 and an activation while idle were each "
    "published as results. The controller sees the arm it sent, the messages in their "
    "order and the round they fall in; the tumbler's own bookkeeping is one more witness, "
    "and a witness who disagrees is the Pit's to hear (5.14), not the controller's to "
    "overrule. A disarmed activation after \"No more Bets\" may be a lost Arm or a reboot, "
    "not a Dealer's early press, so voiding it under 5.5.3 would name the wrong cause. "
    "Issue 23: a held throw was superseded without the Pit: a reconnected tumbler was armed "
    "again and the next press published valid (336 of 6,000 mixed rounds); a tumbler that "
    "re-sent round 1's activation, tumbles and dice after a one-way outage voided round 2 "
    "under 5.5.3 with round 1's dice; and a count of 3 arriving after two lost Tumble "
    "messages was a 5.5.1 void where the tumbler had tumbled three times. Until the "
    "protocol carries event identities, the tumbler's own armed flag against the arm state "
    "the table set is the only proof an event belongs to this round's exchange.",
)
SETTLED_ROUND_CORRECTED = Decision(
    "D22", "Tai Sai 5.6; RWS 5.6, MBS 5.1.2",
    "Tai Sai 5.6 (damaged dice): 'all affected Rounds of play shall be Voided'. Those "
    "rounds' results are already published. How are they voided, and which rounds are "
    "affected?",
    "The Pit gives void_settled_round, signed, naming one published round and the clause "
    "(only a clause that reaches back: in Tai Sai, damaged_dice 5.6). The controller "
    "publishes a correction on results with its own seq, naming the round it voids and "
    "returning every bet of it; the original result stays in the journal and is never "
    "changed. A round is corrected once, only if its result was valid and the table still "
    "holds it (the last 10,000 results it settled, SETTLED_KEPT; docs/mqtt.md, "
    "Corrections, says so to consumers: not the retention window); the round in play is "
    "voided with void_round. Which "
    "rounds the damage affected is the Pit's call, one command per round. In the baccarat "
    "games the command is refused except for a result disputed before the next round "
    "commenced (D23): no clause of theirs voids a round already settled, and RWS 5.6 and "
    "MBS 5.1.2 say earlier outcomes stand once the next round has commenced.",
    "The controller cannot see when a die was damaged, so it cannot choose the rounds; the "
    "Pit can, from surveillance. A published result cannot be recalled from every consumer, "
    "so the void is a new message in the same sequence (docs/mqtt.md says how consumers "
    "apply it), and the journal keeps both: what was paid and why it was undone.",
)
DISPUTED_RESULT = Decision(
    "D23", "RWS 5.6, 5.12, 5.18 (Insurance Plus 5.5, 5.11, 5.17); MBS 5.1.2, 6.1",
    "A result is published the moment the deal is complete. The shoe then reports one of "
    "that round's draws again with another card (the first read was wrong, or the second "
    "is). RWS 5.6 lets an outcome stand once the next round has commenced. Until when can "
    "a baccarat result be corrected, and what happens meanwhile?",
    "The controller records result_disputed (the round, the draw, both reads) and refuses "
    "the next open_betting, saying why, until the Pit answers: confirm_result (the result "
    "stands as published) or void_settled_round naming that round (a correction under the "
    "Shift Manager's clause, unresolved_irregularity, every bet returned). The next round "
    "commences when its betting opens; from then on the result stands and the correction "
    "is refused (RWS 5.6; a later contradiction is only alerted, 5.12). Any other late fact "
    "that contradicts a published deal (a read of a draw the Pit reconstructed) is "
    "disputed the same way.",
    "Before this, the second read raised an alert that promised a wait that never came: "
    "open_betting was accepted and a wrong valid result stood (65 of 328 such faults in "
    "random shoes). The controller cannot know which read is true; the Pit can see the "
    "card. Voiding rather than re-settling is the correction the contract already carries "
    "(docs/mqtt.md, Corrections); the Shift Manager decides (5.18). Holding the next round "
    "costs the table seconds, while letting it commence would make a wrong result final.",
)
ONE_COPY_TOO_MANY = Decision(
    "D24", "RWS 5.5.2, 5.18 (Insurance Plus 5.5.2, 5.17); MBS 5.1, 6.1",
    "The shoe reads a card that would be its ninth copy in an eight-deck shoe. RWS 5.5.2 "
    "voids a round with 'any shortage or excess of cards in the deck'. Is the round void?",
    "Not on the read alone: one copy too many is an excess card or a misread, of this draw "
    "or of an earlier one, and the controller cannot tell which. The read is not trusted: "
    "the round is held for the Pit (D18), whose answer is void_round with irregularity "
    "deck_shortage_or_excess when the card is really an excess (5.5.2), or the deal "
    "reconstructed with the card it sees (which may confirm the reader's card: the shoe's "
    "record then holds a misread of an earlier draw, and the order reveal names it). A "
    "card of another deck set still voids at once (5.5.1): its back is a fact, not a read.",
    "With a reader that misreads at 99%, a wrong read whose correction had not arrived "
    "counted one copy too many, and a later fault-free round was voided under 5.5.2 "
    "(issue 23's model of the physical table). A card in excess is a fact about the cards "
    "on the table, which the Pit sees; the count is only the reader's testimony.",
)

BACCARAT_DECISIONS = (TEN_VALUE, PAIR_SAME_RANK, WU_DALANG, CHAR_SIU_CARDS, BANKER_ON_SIX,
                      DECIDED_BETS, SEEN_BY_THE_PIT, DOUBLE_DRAW_HELD, READS_HELD,
                      OUT_OF_RANGE, DISPUTED_RESULT, ONE_COPY_TOO_MANY)
MBS_DECISIONS = (TEN_VALUE, PAIR_SAME_RANK, MBS_TIE_PUSH, DECIDED_BETS, SEEN_BY_THE_PIT,
                 DEVICE_RESET, DOUBLE_DRAW_HELD, READS_HELD, OUT_OF_RANGE, MBS_LAYOUT_H,
                 DISPUTED_RESULT, ONE_COPY_TOO_MANY)
INSURANCE_DECISIONS = (*BACCARAT_DECISIONS, INSURANCE_WINDOWS, INSURANCE_SETTLEMENT,
                       INSURANCE_NOT_OFFERED)
TAI_SAI_DECISIONS = (FOUR_NUMBER, DOUBLE_SINGLE_AS_PRINTED, TRIPLE_RULE, TAI_SAI_LAYOUTS,
                     DECIDED_BETS, SEEN_BY_THE_PIT, OUT_OF_RANGE, TAI_SAI_THROW,
                     SETTLED_ROUND_CORRECTED)
