"""Families 36-47: water meters, car rental, hospital blood bank, futures desk, bike-share
rebalancing, bulky-waste collection, records retention."""
from dsl import E, F, FB, OK, R, S, TX, U

METER_TOOLS = ["get_meter", "post_reading", "replace_meter", "flag_estimate"]
METER_ERR = "READING_REJECTED: lower than previous reading"

CAR_TOOLS = ["get_rate", "create_reservation", "add_driver", "check_license"]
CAR_ERR = "DRIVER_NOT_ELIGIBLE"

BLOOD_TOOLS = ["get_patient_type", "get_inventory", "crossmatch", "issue_units"]
BLOOD_ERR = "ISSUE_BLOCKED: compatibility requirement not met"

FUT_TOOLS = ["get_contract", "place_order", "roll_position", "get_margin"]
FUT_ERR = "ORDER_REJECTED (2107)"

BIKE_TOOLS = ["get_station_status", "rebalance_move", "create_work_order"]
BIKE_ERR = "MOVE_REJECTED: destination cannot accept requested bikes"

FAMILIES = [
    F("meter-exchange-recorded", "water-utility", METER_TOOLS, "meter-dial-rollover", "operation",
      "When the meter has been exchanged (a different serial on the dial, a plumber or the utility swapped it), record "
      "the swap with replace_meter (old final reading, new serial and start reading) before posting readings from it.",
      ["replace_meter", "new meter", "meter exchange"],
      [
          TX("fail-fix-reasoned", "Post the quarterly reading 00412 for property W-118203", "success",
             U("Post the quarterly reading for W-118203: 00412. The reader noted serial 22K-88101 on the dial."),
             E("post_reading", {"property": "W-118203", "reading": 412, "date": "2026-06-30"}, METER_ERR),
             OK("get_meter", {"property": "W-118203"}, {"serial": "17B-40220", "last_reading": 1883, "last_date": "2026-03-31"}),
             R("The serial on file is 17B-40220 but the reader saw 22K-88101: the meter was exchanged and the new one "
               "started near zero. Record the exchange first, then post."),
             OK("replace_meter", {"property": "W-118203", "old_serial": "17B-40220", "old_final": 1951, "new_serial": "22K-88101",
                                  "new_start": 0, "date": "2026-05-12"}, {"recorded": True}),
             OK("post_reading", {"property": "W-118203", "reading": 412, "date": "2026-06-30"}, {"consumption_m3": 480})),
          TX("user-corrects", "Enter reading 00087 for W-220915", "success",
             U("Enter reading 00087 for W-220915."),
             E("post_reading", {"property": "W-220915", "reading": 87, "date": "2026-07-01"}, METER_ERR),
             R("Lower than the previous reading; I'll post an estimate instead and flag it for a re-read."),
             U("No, don't estimate. The customer says the plumber swapped the meter in May when the old one leaked. "
               "Old one ended at 04521, new one is serial 23A-10077."),
             OK("replace_meter", {"property": "W-220915", "old_serial": "15C-77310", "old_final": 4521, "new_serial": "23A-10077",
                                  "new_start": 0, "date": "2026-05-20"}, {"recorded": True}),
             OK("post_reading", {"property": "W-220915", "reading": 87, "date": "2026-07-01"}, {"consumption_m3": 141}),
             FB("Thanks, that's right.")),
      ],
      [
          "post reading 00233 for W-301877, the customer says the serial on the dial isn't the one on the bill",
          "READING_REJECTED: lower than previous reading. W-412090, the plumber put in a different meter in April",
          "Hi, I'm a landlord. We had the water meter at 14 Orchard Row (W-509212) swapped out during the kitchen "
          "refit in March, and now my online reading of 00056 is refused as too low. Obviously it's low, the thing is "
          "brand new! How do I get the bill right?",
          "reading refused after the utility changed the meter",
      ]),
    F("meter-dial-rollover", "water-utility", METER_TOOLS, "meter-exchange-recorded", "operation",
      "A register that passed its maximum (99999 on a 5-digit dial) wraps round to zero: post the reading with "
      "rollover=true; consumption is (max + 1 - previous) + current. The meter itself is unchanged.",
      ["rollover", "roll over", "wrapped"],
      [
          TX("wrong-alt+fail-fix-reasoned", "Post reading 00214 for W-100442 (last reading 99871)", "success",
             U("Post reading 00214 for W-100442. Last quarter it was 99871."),
             E("post_reading", {"property": "W-100442", "reading": 214, "date": "2026-06-30"}, METER_ERR),
             R("Looks like a meter exchange; record it."),
             E("replace_meter", {"property": "W-100442", "old_serial": "09D-11023", "new_serial": "09D-11023", "new_start": 0},
               "SERIAL_UNCHANGED: serial matches installed meter"),
             R("Same serial, so it's the same meter. A 5-digit register at 99871 followed by 00214 simply went past "
               "99999 and started again at zero."),
             OK("post_reading", {"property": "W-100442", "reading": 214, "date": "2026-06-30", "rollover": True},
                {"consumption_m3": 343})),
          TX("blind-retries", "Enter reading 00098 for farm supply W-700318", "failure",
             U("Enter reading 00098 for the farm supply W-700318."),
             E("post_reading", {"property": "W-700318", "reading": 98, "date": "2026-09-30"}, METER_ERR),
             E("post_reading", {"property": "W-700318", "reading": 98, "date": "2026-09-30"}, METER_ERR),
             E("post_reading", {"property": "W-700318", "reading": 98, "date": "2026-09-30"}, METER_ERR),
             FB("The farm uses a lot of water; the dial was at 99420 last time and went round past 99999. It has to be "
                "posted as a rollover, not sent again and again.", "negative")),
      ],
      [
          "reading for W-338120 is 00330, previous one was 99650, same meter",
          "READING_REJECTED: lower than previous reading. Old 5-digit dial, 99,903 last quarter, 00,120 now",
          "Our dairy farm's meter (W-801144) must be thirty years old; the numbers have gone from something like 99800 "
          "in spring to 00450 today and your system says the reading is lower than before. Nobody has touched the "
          "meter, I promise. What should I put in?",
          "huge consumer's dial went past 99999, reading refused",
      ]),

    F("rental-young-driver", "car-rental", CAR_TOOLS, "rental-foreign-licence", "operation",
      "Drivers aged 21-24 can rent only with the young-driver surcharge accepted (young_driver_surcharge=true) and in "
      "non-premium classes; quote it to the customer and retry with it set.",
      ["young_driver_surcharge", "surcharge"],
      [
          TX("explain-after", "Reserve a compact for Lena Fischer (born 2003) from Munich airport, 4-9 June", "success",
             U("Reserve a compact for Lena Fischer, date of birth 12 March 2003, Munich airport, 4 to 9 June."),
             E("create_reservation", {"driver": "Lena Fischer", "dob": "2003-03-12", "class": "compact", "pickup": "MUC",
                                      "from": "2026-06-04", "to": "2026-06-09"}, CAR_ERR),
             OK("get_rate", {"class": "compact", "pickup": "MUC", "from": "2026-06-04", "to": "2026-06-09", "young_driver": True},
                {"total_eur": 289.0, "young_driver_surcharge_eur": 95.0}),
             OK("create_reservation", {"driver": "Lena Fischer", "dob": "2003-03-12", "class": "compact", "pickup": "MUC",
                                      "from": "2026-06-04", "to": "2026-06-09", "young_driver_surcharge": True},
                {"reservation": "RV-66120", "total_eur": 289.0}),
             R("Booked. She is 23, and under-25 drivers can only rent with the young-driver surcharge accepted (95 EUR "
               "here); that's why the first attempt was refused."),
             FB("Fine, she knew about the extra charge.")),
          TX("blind-retries", "Book an SUV for Tom Reyes (22) at Lisbon airport for a week", "failure",
             U("Book an SUV for Tom Reyes, he's 22, Lisbon airport, 10 to 17 August."),
             E("create_reservation", {"driver": "Tom Reyes", "age": 22, "class": "suv_premium", "pickup": "LIS"}, CAR_ERR),
             E("create_reservation", {"driver": "Tom Reyes", "age": 22, "class": "suv_premium", "pickup": "LIS"}, CAR_ERR),
             E("create_reservation", {"driver": "Tom Reyes", "age": 22, "class": "suv_premium", "pickup": "LIS"}, CAR_ERR),
             FB("At 22 he can only rent a standard class with the young-driver surcharge accepted; a premium SUV was "
                "never going to work.", "negative")),
      ],
      [
          "car for Priya Nair, 24, Dublin airport 2-6 May, economy",
          "DRIVER_NOT_ELIGIBLE for a 21-year-old student booking a Fiat 500 in Rome",
          "Hello! My son has just passed his test and turned 21, and we'd like him to be able to drive a small hire car "
          "on our family holiday in Mallorca in July. He's the only one in the family who enjoys driving. The website "
          "refuses the booking as soon as I put his details in. Is it possible at all?",
          "rental refused, driver born in 2004",
      ]),
    F("rental-foreign-licence", "car-rental", CAR_TOOLS, "rental-young-driver", "operation",
      "A licence issued outside the rental country must be validated with check_license, giving the International "
      "Driving Permit number, before create_reservation; ask the customer for it if missing.",
      ["check_license", "international driving permit", "idp"],
      [
          TX("wrong-alt+fail-fix-reasoned", "Reserve a midsize for João Almeida (Brazilian licence) at Frankfurt, 3-10 Oct", "success",
             U("Reserve a midsize for João Almeida, 34, Brazilian licence, Frankfurt airport 3 to 10 October."),
             E("create_reservation", {"driver": "João Almeida", "age": 34, "class": "midsize", "pickup": "FRA"}, CAR_ERR),
             R("Maybe the driver needs a surcharge flag."),
             E("create_reservation", {"driver": "João Almeida", "age": 34, "class": "midsize", "pickup": "FRA",
                                      "young_driver_surcharge": True}, CAR_ERR),
             R("He's 34, so age isn't the issue. A licence from outside the EU has to be validated with his "
               "International Driving Permit first; he sent the IDP number with his booking email."),
             OK("check_license", {"driver": "João Almeida", "licence_country": "BR", "idp_number": "IDP-BR-0099812"}, {"valid": True}),
             OK("create_reservation", {"driver": "João Almeida", "age": 34, "class": "midsize", "pickup": "FRA"},
                {"reservation": "RV-67033"})),
          TX("asks-user", "Book an estate car for Aiko Tanaka (Japanese licence) in Edinburgh", "success",
             U("Book an estate car for Aiko Tanaka, Japanese licence, Edinburgh city centre, 14 to 18 September."),
             E("create_reservation", {"driver": "Aiko Tanaka", "class": "estate", "pickup": "EDI-CITY"}, CAR_ERR),
             R("A Japanese licence needs an International Driving Permit check before renting here. Asking the user "
               "for her IDP number."),
             U("Her IDP is JP-IDP-4471203."),
             OK("check_license", {"driver": "Aiko Tanaka", "licence_country": "JP", "idp_number": "JP-IDP-4471203"}, {"valid": True}),
             OK("create_reservation", {"driver": "Aiko Tanaka", "class": "estate", "pickup": "EDI-CITY"}, {"reservation": "RV-67101"}),
             FB("Thank you.")),
      ],
      [
          "car for Mr. Okonkwo, Nigerian licence, Heathrow 11-15 Nov",
          "DRIVER_NOT_ELIGIBLE, customer is 45 and drives on an Indian licence",
          "Hi, my parents are visiting from Seoul next month and my father (he's 61 and has driven for forty years) "
          "wants to rent a car at Vienna airport for a road trip. The booking fails straight away. Does he need "
          "anything special?",
          "tourist from Argentina can't book a rental car",
      ]),

    F("bloodbank-planned-crossmatch", "blood-bank", BLOOD_TOOLS, "bloodbank-emergency-release", "operation",
      "For planned transfusions (surgery, elective top-ups) run crossmatch on a sample less than 72 hours old first, "
      "then issue_units; an older sample needs a fresh draw.",
      ["crossmatch", "cross-match", "72 hours"],
      [
          TX("fail-fix-reasoned", "Issue 2 units of red cells for Mr. Dunn (MRN 4410982) for tomorrow's hip replacement", "success",
             U("Issue 2 units of red cells for Mr. Dunn, MRN 4410982, for his hip replacement tomorrow at 08:00."),
             E("issue_units", {"mrn": "4410982", "product": "RBC", "units": 2}, BLOOD_ERR),
             OK("get_patient_type", {"mrn": "4410982"}, {"abo_rh": "A+", "antibodies": "none", "sample_taken": "2026-02-09T07:40:00Z"}),
             R("A planned transfusion needs a crossmatch against a sample under 72 hours old. Today's sample is fine; "
               "run the crossmatch, then issue."),
             OK("crossmatch", {"mrn": "4410982", "product": "RBC", "units": 2}, {"compatible_units": ["U-88120", "U-88121"]}),
             OK("issue_units", {"mrn": "4410982", "product": "RBC", "units": ["U-88120", "U-88121"]}, {"issued": 2})),
          TX("long-noisy+fail-fix-silent", "Morning blood bank list: top-ups for the haematology day unit", "partial",
             U("Work through the haematology day unit list: Mrs. Igwe (MRN 3301877) 2 units, Mr. Salo (MRN 5520331) 1 unit, "
               "and check O neg stock."),
             OK("get_inventory", {"product": "RBC", "group": "O-"}, {"units": 14, "expiring_48h": 3}),
             S("inventory.note", "3 O- units expire within 48 h"),
             OK("get_patient_type", {"mrn": "3301877"}, {"abo_rh": "B+", "sample_taken": "2026-02-10T06:55:00Z"}),
             E("issue_units", {"mrn": "3301877", "product": "RBC", "units": 2}, BLOOD_ERR),
             OK("crossmatch", {"mrn": "3301877", "product": "RBC", "units": 2}, {"compatible_units": ["U-90031", "U-90032"]}),
             OK("issue_units", {"mrn": "3301877", "product": "RBC", "units": ["U-90031", "U-90032"]}, {"issued": 2}),
             OK("get_patient_type", {"mrn": "5520331"}, {"abo_rh": "O+", "sample_taken": "2026-02-05T09:10:00Z"}),
             E("crossmatch", {"mrn": "5520331", "product": "RBC", "units": 1}, "SAMPLE_EXPIRED: sample older than 72 h"),
             S("5520331.action", "new group-and-save sample requested from the day unit"),
             FB("One done, one waiting for a new sample; fine.")),
      ],
      [
          "issue 3 units for Mrs. Kowalczyk's elective knee revision Thursday, MRN 7730218",
          "ISSUE_BLOCKED: compatibility requirement not met. Routine transfusion for an anaemic outpatient, sample taken this morning",
          "Ward 9 here. We've got Mr. Hassan (MRN 6602114) booked for a two-unit top-up this afternoon, the sample went "
          "down to you at 7 am. The system won't release the blood to us. What's holding it up?",
          "pre-op blood for a scheduled bypass can't be issued",
      ]),
    F("bloodbank-emergency-release", "blood-bank", BLOOD_TOOLS, "bloodbank-planned-crossmatch", "operation",
      "In a life-threatening bleed with no time for compatibility testing, issue group O negative red cells with "
      "emergency_release=true (the clinician signs afterwards); don't wait for a crossmatch.",
      ["emergency_release", "o negative", "o-neg"],
      [
          TX("wrong-alt+user-corrects", "Trauma bay 2: unknown male, massive bleed, needs blood now", "partial",
             U("Trauma bay 2: unidentified male, motorbike crash, massive bleed. Needs blood now. Temporary MRN 9900012."),
             E("issue_units", {"mrn": "9900012", "product": "RBC", "units": 4}, BLOOD_ERR),
             R("No compatibility testing on file; run a crossmatch first."),
             E("crossmatch", {"mrn": "9900012", "product": "RBC", "units": 4}, "NO_SAMPLE: no group-and-save sample received"),
             U("There's no time for samples! He's losing blood by the minute. Emergency release, O negative, four units."),
             OK("issue_units", {"mrn": "9900012", "product": "RBC", "group": "O-", "units": 4, "emergency_release": True},
                {"issued": 4, "signature_required": True}),
             FB("Blood got there, but several minutes late.", "negative")),
          TX("rule-first", "Obstetric haemorrhage in theatre 3, patient MRN 2208410, needs red cells immediately", "success",
             U("Theatre 3: major obstetric haemorrhage, patient MRN 2208410, they need red cells immediately, sample is on its way."),
             R("Life-threatening bleed and no time to wait for compatibility testing: issue O negative under emergency "
               "release now; the sample can follow for the next units."),
             OK("issue_units", {"mrn": "2208410", "product": "RBC", "group": "O-", "units": 2, "emergency_release": True},
                {"issued": 2, "signature_required": True}),
             OK("get_inventory", {"product": "RBC", "group": "O-"}, {"units": 9}),
             FB("Thank you, fast.")),
      ],
      [
          "resus: stab wound, systolic 60, blood needed this minute",
          "ISSUE_BLOCKED: compatibility requirement not met. Patient bleeding out in ED bay 4, no group known yet",
          "This is the ambulance liaison: we're two minutes out with a crush injury from the quarry, she's lost a lot of "
          "blood and the crew can't get a pressure. The ED consultant wants blood waiting in resus when we arrive. "
          "Can you get it ready?",
          "massive haemorrhage, no sample, need red cells now",
      ]),

    F("futures-tick-size", "futures-trading", FUT_TOOLS, "futures-expiring-front-month", "operation",
      "Limit prices must be a whole multiple of the contract's tick size (get_contract: e.g. 0.25 for index futures, "
      "0.005 for Bund, 0.01 for crude); snap the price to a valid increment before place_order.",
      ["tick size", "multiple of", "increment"],
      [
          TX("fail-fix-reasoned", "Buy 3 ES June contracts limit 5312.10", "success",
             U("Buy 3 ES June at a limit of 5312.10."),
             E("place_order", {"symbol": "ESM6", "side": "buy", "qty": 3, "type": "limit", "price": 5312.10}, FUT_ERR),
             OK("get_contract", {"symbol": "ESM6"}, {"tick_size": 0.25, "status": "trading", "last_trade": "2026-06-19"}),
             R("The ES tick size is 0.25, so prices move in steps of 0.25; 5312.10 isn't a valid price. For a buy limit use the valid price just below, 5312.00."),
             OK("place_order", {"symbol": "ESM6", "side": "buy", "qty": 3, "type": "limit", "price": 5312.00}, {"order_id": "OR-771203", "status": "working"})),
          TX("user-corrects", "Sell 10 Bund September at 131.237", "success",
             U("Sell 10 Bund September at 131.237."),
             E("place_order", {"symbol": "FGBLU6", "side": "sell", "qty": 10, "type": "limit", "price": 131.237}, FUT_ERR),
             R("Maybe the September contract isn't open yet; I'll look at rolling to another month."),
             U("September is the active contract. Bund trades in 0.01 steps, make it 131.24."),
             OK("place_order", {"symbol": "FGBLU6", "side": "sell", "qty": 10, "type": "limit", "price": 131.24}, {"order_id": "OR-771288", "status": "working"}),
             FB("Filled.")),
      ],
      [
          "buy 2 NQ Sept limit 18840.30",
          "ORDER_REJECTED (2107) on a sell limit for gold at 2391.47",
          "I'm trying to place a resting bid in the Euro Stoxx future at 4982.5 for 20 lots and the platform bounces "
          "it with 2107 every time. The contract is the active one, the market's open and I have plenty of margin. "
          "What's wrong with the order?",
          "limit order rejected with 2107, price has three decimals",
      ]),
    F("futures-expiring-front-month", "futures-trading", FUT_TOOLS, "futures-tick-size", "operation",
      "A front-month contract in its expiry or delivery period takes no new opening orders: trade the next contract "
      "month (get_contract shows which is active), and move existing positions with roll_position.",
      ["next contract month", "roll_position", "next month"],
      [
          TX("wrong-alt+fail-fix-reasoned", "Buy 5 WTI crude (CLF6) at 71.40 for the client's hedge", "success",
             U("Buy 5 crude, CLF6, limit 71.40, for the client's hedge."),
             E("place_order", {"symbol": "CLF6", "side": "buy", "qty": 5, "type": "limit", "price": 71.40}, FUT_ERR),
             R("Maybe the price isn't on a valid step; try 71.4 exactly as a market order."),
             E("place_order", {"symbol": "CLF6", "side": "buy", "qty": 5, "type": "market"}, FUT_ERR),
             OK("get_contract", {"symbol": "CLF6"}, {"status": "expiring (closing only)", "last_trade": "2025-12-19", "next": "CLG6"}),
             R("CLF6 is in its final days and only accepts closing orders. A new hedge goes in the next contract "
               "month, CLG6."),
             OK("place_order", {"symbol": "CLG6", "side": "buy", "qty": 5, "type": "limit", "price": 71.40}, {"order_id": "OR-772010", "status": "working"})),
          TX("blind-retries", "Add 4 lots to the corn position in ZCH6", "failure",
             U("Add 4 lots to the corn position, ZCH6, at market."),
             E("place_order", {"symbol": "ZCH6", "side": "buy", "qty": 4, "type": "market"}, FUT_ERR),
             E("place_order", {"symbol": "ZCH6", "side": "buy", "qty": 4, "type": "market"}, FUT_ERR),
             E("place_order", {"symbol": "ZCH6", "side": "buy", "qty": 4, "type": "market"}, FUT_ERR),
             FB("March corn is in its delivery period; no new longs there. The add should have gone into May (ZCK6), "
                "and the existing lots rolled.", "negative")),
      ],
      [
          "buy 3 natural gas NGX6 at market; it's the 26th of October",
          "ORDER_REJECTED (2107) on a new long in the March contract two days before its last trading day",
          "We've got a customer who wants to open a hedge in cocoa today. I entered it in the front contract, which "
          "is what the screen shows by default, but it's the last week before first notice and the order is rejected "
          "with 2107 whatever price I give it. How do I get the hedge on?",
          "new order in a contract that's about to expire is rejected",
      ]),

    F("bikeshare-van-capacity", "bike-share", BIKE_TOOLS, "bikeshare-flat-ebikes", "operation",
      "A rebalance move carries at most 20 bikes (one van load) per call; split larger transfers into several moves "
      "of 20 or fewer.",
      ["at most 20", "several moves", "van load"],
      [
          TX("fail-fix-silent", "Move 45 bikes from Central Station to the university before 08:00", "success",
             U("Move 45 bikes from Central Station (ST-001) to University Plaza (ST-044) before 08:00."),
             OK("get_station_status", {"station": "ST-044"}, {"docks_free": 52, "bikes": 3}),
             E("rebalance_move", {"from": "ST-001", "to": "ST-044", "bikes": 45}, BIKE_ERR + " (max per move exceeded)"),
             OK("rebalance_move", {"from": "ST-001", "to": "ST-044", "bikes": 20}, {"move_id": "MV-9001"}),
             OK("rebalance_move", {"from": "ST-001", "to": "ST-044", "bikes": 20}, {"move_id": "MV-9002"}),
             OK("rebalance_move", {"from": "ST-001", "to": "ST-044", "bikes": 5}, {"move_id": "MV-9003"})),
          TX("blind-retries", "Shift 30 bikes from the stadium to the riverside after the match", "failure",
             U("After the match, shift 30 bikes from Stadium North (ST-210) to Riverside (ST-118)."),
             E("rebalance_move", {"from": "ST-210", "to": "ST-118", "bikes": 30}, BIKE_ERR),
             E("rebalance_move", {"from": "ST-210", "to": "ST-118", "bikes": 30}, BIKE_ERR),
             E("rebalance_move", {"from": "ST-210", "to": "ST-118", "bikes": 30}, BIKE_ERR),
             FB("Riverside had 60 free docks. One move is one van load, at most 20 bikes. Two moves, 20 and 10.", "negative")),
      ],
      [
          "rebalance 60 classic bikes from the ferry terminal to the old town docks",
          "MOVE_REJECTED: destination cannot accept requested bikes. 35 bikes to a station with 50 free docks",
          "Big concert at the arena tonight, so we need loads of bikes there by 18:00, say 50 from the depot (ST-000) "
          "to Arena West (ST-301), which is nearly empty. The planning tool keeps rejecting the move. Can you set it up?",
          "bulk transfer of 28 bikes rejected though the target is empty",
      ]),
    F("bikeshare-flat-ebikes", "bike-share", BIKE_TOOLS, "bikeshare-van-capacity", "operation",
      "E-bikes below 20 % battery can only go to stations with charging docks: send them to a charging hub instead, "
      "or raise create_work_order for a battery swap before moving them.",
      ["charging", "battery swap"],
      [
          TX("wrong-alt+fail-fix-reasoned", "Move 6 e-bikes from Harbour Gate to Market Square", "success",
             U("Move the 6 e-bikes from Harbour Gate (ST-071) to Market Square (ST-012)."),
             E("rebalance_move", {"from": "ST-071", "to": "ST-012", "bikes": 6, "type": "ebike"}, BIKE_ERR),
             R("Maybe the move is too big; split it."),
             E("rebalance_move", {"from": "ST-071", "to": "ST-012", "bikes": 3, "type": "ebike"}, BIKE_ERR),
             OK("get_station_status", {"station": "ST-071"}, {"ebikes": [{"id": "EB-301", "battery": 11}, {"id": "EB-307", "battery": 8},
                                                                       {"id": "EB-322", "battery": 14}], "note": "6 e-bikes, all below 20%"}),
             OK("get_station_status", {"station": "ST-012"}, {"docks_free": 14, "charging_docks": 0}),
             R("They're all nearly flat and Market Square has no charging docks. Low e-bikes can only go to a "
               "station that can charge them: send them to the Depot hub."),
             OK("rebalance_move", {"from": "ST-071", "to": "ST-000", "bikes": 6, "type": "ebike"}, {"move_id": "MV-9120"})),
          TX("explain-after", "Get 4 e-bikes from Lakeside to the hospital station", "success",
             U("The hospital station (ST-090) is empty; get 4 e-bikes over from Lakeside (ST-055)."),
             E("rebalance_move", {"from": "ST-055", "to": "ST-090", "bikes": 4, "type": "ebike"}, BIKE_ERR),
             OK("create_work_order", {"station": "ST-055", "task": "battery_swap", "bikes": ["EB-118", "EB-140", "EB-141", "EB-199"]},
                {"work_order": "WO-5531", "status": "done"}),
             OK("rebalance_move", {"from": "ST-055", "to": "ST-090", "bikes": 4, "type": "ebike"}, {"move_id": "MV-9188"}),
             R("Moved. The four e-bikes were under 20 % battery and the hospital station has no charging docks, so they "
               "needed a battery swap before they could go there."),
             FB("Great.")),
      ],
      [
          "move 5 e-bikes with almost empty batteries from Canal Walk to the library",
          "MOVE_REJECTED: destination cannot accept requested bikes. 3 e-bikes at 9% to a station with plenty of space",
          "The e-bikes at the beach station have been sitting there all week, the app shows most of them in the red, "
          "and nobody rents them. I'd like 4 of them moved up to the Town Hall station where people actually ride. "
          "The move keeps failing although Town Hall has loads of room.",
          "low-battery e-bikes won't transfer",
      ]),

    F("bulky-waste-item-list", "waste-collection", ["get_property", "get_collection_calendar", "book_bulky_collection"], None, "operation",
      "A bulky-waste collection is priced and loaded per item (at most 6; fridges and freezers go as a separate "
      "appliance booking): ask the user exactly which items before booking instead of guessing.",
      ["which items", "list of items", "ask the user"],
      [
          TX("fail-fix-reasoned+asks-user", "Book a bulky waste pick-up at 12 Cedar Close", "success",
             U("Book a bulky waste pick-up at 12 Cedar Close, we're clearing out the garage."),
             OK("get_property", {"address": "12 Cedar Close"}, {"uprn": "100023118", "round": "Tue-B"}),
             E("book_bulky_collection", {"uprn": "100023118", "items": ["garage clearance"]}, "BOOKING_INVALID: items must be listed individually (max 6)"),
             R("The council prices and loads item by item. Asking the user which items exactly."),
             U("An old sofa bed, two bikes, a lawnmower and a chest freezer."),
             R("The freezer needs a separate appliance booking; the rest fit one collection."),
             OK("book_bulky_collection", {"uprn": "100023118", "items": ["sofa bed", "bicycle", "bicycle", "lawnmower"]},
                {"booking": "BW-44102", "date": "2026-05-12", "price_gbp": 38.0}),
             OK("book_bulky_collection", {"uprn": "100023118", "type": "appliance", "items": ["chest freezer"]},
                {"booking": "BW-44103", "date": "2026-05-12", "price_gbp": 20.0})),
          TX("wrong-alt", "Arrange collection of old furniture from Flat 3, 40 Mill Street", "partial",
             U("Arrange collection of old furniture from Flat 3, 40 Mill Street."),
             OK("get_property", {"address": "Flat 3, 40 Mill Street"}, {"uprn": "100023990", "round": "Thu-A"}),
             OK("book_bulky_collection", {"uprn": "100023990", "items": ["sofa", "armchair"]}, {"booking": "BW-44170", "date": "2026-05-14"}),
             S("BW-44170.crew_note", "also found a wardrobe, a fridge and a mattress, not booked, left on site"),
             FB("I never said sofa and armchair, you guessed. Half the stuff is still on the pavement. Ask what the "
                "items are.", "negative")),
      ],
      [
          "book bulky collection for 7 Heron Way",
          "we're moving out of 22 Beech Road next week, please get the council to take the junk",
          "Hi, my mum has gone into a care home and we're emptying her bungalow at 5 Lark Rise. There's quite a lot of "
          "big stuff the charity shops won't take. Can you book the council to come and collect it? Any day next week "
          "works.",
          "large item pick-up request, address 31 Kestrel Drive",
      ]),
    F("records-retention-hold-check", "records-retention", ["search_records", "check_legal_hold", "purge_records"], None, "operation",
      "Before purging records past their retention date, call check_legal_hold for the customers or matters in the "
      "batch and exclude held ones; purge_records aborts the whole batch if it contains a single held record.",
      ["check_legal_hold", "legal hold"],
      [
          TX("blind-retries", "Purge customer correspondence older than 7 years for the Northern region", "failure",
             U("Purge customer correspondence older than 7 years for the Northern region."),
             OK("search_records", {"region": "north", "type": "correspondence", "older_than_years": 7}, {"count": 18204, "batch": "B-2201"}),
             E("purge_records", {"batch": "B-2201"}, "PURGE_ABORTED: batch contains protected records"),
             E("purge_records", {"batch": "B-2201"}, "PURGE_ABORTED: batch contains protected records"),
             FB("Three customers in that batch are part of the Halden litigation. You have to check for holds and take "
                "their records out of the batch; re-running the purge changes nothing.", "negative")),
          TX("rule-first", "Delete closed-account KYC files past retention, accounts closed before 2019", "success",
             U("Delete KYC files past retention for accounts closed before 2019."),
             R("Anything under a legal hold must survive, and a single held record aborts the whole purge; check holds "
               "first and exclude them."),
             OK("search_records", {"type": "kyc", "account_closed_before": "2019-01-01"}, {"count": 6120, "batch": "B-2230"}),
             OK("check_legal_hold", {"batch": "B-2230"}, {"held": ["CUST-440981", "CUST-502217"]}),
             OK("purge_records", {"batch": "B-2230", "exclude_customers": ["CUST-440981", "CUST-502217"]}, {"purged": 6098}),
             FB("Good.")),
      ],
      [
          "clear out rejected job-applicant files older than 2 years",
          "PURGE_ABORTED: batch contains protected records",
          "Compliance asked us to finally run the retention clean-up on the old claims archive (everything closed "
          "before 2017), but last time someone tried, the job died halfway with an error about protected records and "
          "nobody followed up. Can you run it properly this time?",
          "retention purge of old invoices fails on the whole batch",
      ]),
]
