"""Families 13-23: motor/home insurance claims, pharmacy refills, car ferries, museum loans,
warehouse picking, fishing catch reports."""
from dsl import E, F, FB, OK, R, S, TX, U

CLAIM_TOOLS = ["get_policy", "open_claim", "attach_document", "request_adjuster"]
CLAIM_ERR = "CLAIM_REJECTED: no active coverage for loss date"

RX_TOOLS = ["get_rx", "refill_rx", "transfer_rx", "contact_prescriber"]
RX_ERR = "REFILL_NOT_ALLOWED (code R7)"

FERRY_TOOLS = ["get_sailings", "quote_fare", "book_crossing", "add_vehicle"]
FERRY_ERR = "NO_AVAILABILITY for requested options"

LOAN_TOOLS = ["get_object", "create_loan", "request_condition_report", "set_insurance_value"]
LOAN_ERR = "LOAN_BLOCKED: object not cleared for loan"

WMS_TOOLS = ["get_stock", "create_pick", "move_stock", "release_wave"]
WMS_ERR = "PICK_FAILED: insufficient pickable quantity at pick face"

FAMILIES = [
    F("claim-incident-date", "insurance-claims", CLAIM_TOOLS, "claim-previous-policy-term", "operation",
      "loss_date is the date the incident happened, not the day it is reported: a late report on a policy that has "
      "since been cancelled or moved to another insurer is still covered if the incident fell inside the cover period.",
      ["incident date", "when it happened", "date of the incident"],
      [
          TX("fail-fix-reasoned", "Open a claim for C-40918 (AU-771203): rear-ended on 28 Feb, car sold and policy cancelled since", "success",
             U("Open a claim for customer C-40918, policy AU-771203: rear-ended at a roundabout on 28 February, reporting "
               "it now. They sold the car on 2 March and cancelled the policy."),
             E("open_claim", {"policy": "AU-771203", "loss_date": "2026-03-05", "cause": "collision_third_party"}, CLAIM_ERR),
             R("I sent today's date. The policy ended on 2 March, but the collision happened on 28 February, inside the "
               "cover period: the loss date has to be the date of the incident."),
             OK("open_claim", {"policy": "AU-771203", "loss_date": "2026-02-28", "cause": "collision_third_party"},
                {"claim_id": "CL-610442", "status": "open"}),
             OK("attach_document", {"claim_id": "CL-610442", "file": "rear_bumper_photos.zip"}, {"attached": True})),
          TX("user-corrects", "Hail damage claim on home policy HM-22019, storm on 14 June, customer left us on 1 July", "success",
             U("Hail damage claim on home policy HM-22019. The storm was 14 June; the customer moved to another insurer on 1 July."),
             E("open_claim", {"policy": "HM-22019", "loss_date": "2026-07-09", "cause": "hail"}, CLAIM_ERR),
             R("The policy isn't active any more. I'll ask for an adjuster to review coverage manually."),
             U("No need for an adjuster, the storm was in June. Use the storm date, not today's."),
             OK("open_claim", {"policy": "HM-22019", "loss_date": "2026-06-14", "cause": "hail"}, {"claim_id": "CL-611090", "status": "open"}),
             FB("That's it.")),
      ],
      [
          "open claim on AU-903114: fender bender on 2 Nov, customer cancelled the policy on the 10th after selling the car",
          "CLAIM_REJECTED: no active coverage for loss date. Water leak back in January, the customer switched insurer in February and is only reporting it today",
          "Hello, I used to be insured with you (policy HM-48220) until I moved abroad on 15 March. In early March, "
          "while I was still living there, a pipe burst under the kitchen sink and ruined the floor. I've only just found "
          "the plumber's receipts. Your website says my policy isn't active. Can I still claim?",
          "late-reported bike theft, policy has ended since, claim won't open",
      ]),
    F("claim-previous-policy-term", "insurance-claims", CLAIM_TOOLS, "claim-incident-date", "operation",
      "A renewal gives the policy a new term number (…-R2, …-R3); a loss that happened before the renewal date must be "
      "filed against the previous term's number (get_policy lists the terms), not the current one.",
      ["previous term", "prior term", "term number"],
      [
          TX("wrong-alt+fail-fix-reasoned", "Windscreen claim for C-51877 on AU-550812-R2, cracked on 29 March", "success",
             U("Customer C-51877 cracked their windscreen on 29 March. Policy AU-550812-R2."),
             E("open_claim", {"policy": "AU-550812-R2", "loss_date": "2026-03-29", "cause": "glass"}, CLAIM_ERR),
             R("Maybe it wants the UK date format."),
             E("open_claim", {"policy": "AU-550812-R2", "loss_date": "29/03/2026", "cause": "glass"}, CLAIM_ERR),
             OK("get_policy", {"policy": "AU-550812"}, {"terms": [{"number": "AU-550812-R1", "from": "2025-04-01", "to": "2026-03-31"},
                                                                  {"number": "AU-550812-R2", "from": "2026-04-01", "to": "2027-03-31"}]}),
             R("R2 started on 1 April; a loss on 29 March belongs to the previous term, R1."),
             OK("open_claim", {"policy": "AU-550812-R1", "loss_date": "2026-03-29", "cause": "glass"}, {"claim_id": "CL-612377", "status": "open"})),
          TX("blind-retries", "Claim for a parked-car scrape on 27 April, policy AU-338120-R4", "failure",
             U("Claim for a scrape on a parked car, 27 April, policy AU-338120-R4."),
             E("open_claim", {"policy": "AU-338120-R4", "loss_date": "2026-04-27", "cause": "collision_unattended"}, CLAIM_ERR),
             E("open_claim", {"policy": "AU-338120-R4", "loss_date": "2026-04-27", "cause": "collision_unattended"}, CLAIM_ERR),
             E("open_claim", {"policy": "AU-338120-R4", "loss_date": "2026-04-27", "cause": "collision_unattended"}, CLAIM_ERR),
             FB("The policy renewed on 1 May, so R4 only starts then. The April scrape goes on the previous term, R3, "
                "the one running at the time.", "negative")),
      ],
      [
          "windscreen claim for AU-662019-R4, chip happened 30 Dec, policy renewed 1 Jan",
          "CLAIM_REJECTED: no active coverage for loss date. Hit a deer on 28 Sept; their annual renewal went through on 1 Oct with the new number AU-118340-R3",
          "My husband reversed into a bollard on the last weekend of August, and our insurance auto-renewed on 1 "
          "September (we got a new schedule with a slightly different number ending R5). The claim form says we had no "
          "cover on that date, but we've been with you for five years without a break!",
          "claim for a loss a few days before the renewal date is refused",
      ]),

    F("rx-no-refills-renewal", "pharmacy", RX_TOOLS, "rx-other-store-transfer", "operation",
      "When get_rx shows 0 refills remaining, refill_rx will keep failing: send a renewal request to the prescriber "
      "with contact_prescriber and tell the patient it's pending.",
      ["contact_prescriber", "renewal request", "prescriber"],
      [
          TX("blind-retries", "Refill RX-3308211 (lisinopril) for Mrs. Alvarez", "failure",
             U("Refill RX-3308211 for Mrs. Alvarez, lisinopril 10 mg."),
             E("refill_rx", {"rx": "RX-3308211"}, RX_ERR),
             E("refill_rx", {"rx": "RX-3308211"}, RX_ERR),
             E("refill_rx", {"rx": "RX-3308211"}, RX_ERR),
             FB("She has no refills left on that script. You needed to send Dr. Kim a renewal request, not keep "
                "pressing refill.", "negative")),
          TX("fail-fix-reasoned", "Refill RX-4471920 (omeprazole) for Mr. Brandt", "partial",
             U("Mr. Brandt wants his omeprazole refilled, RX-4471920."),
             E("refill_rx", {"rx": "RX-4471920"}, RX_ERR),
             OK("get_rx", {"rx": "RX-4471920"}, {"drug": "omeprazole 20 mg", "refills_remaining": 0, "store": "0388",
                                                "prescriber": "Dr. N. Mensah"}),
             R("This store holds it, but there are no refills left. Only the prescriber can authorise more, so send a renewal request."),
             OK("contact_prescriber", {"rx": "RX-4471920", "request": "renewal", "channel": "e-fax"}, {"sent": True, "ref": "RN-22019"}),
             S("RX-4471920.status", "renewal requested"),
             FB("OK, I'll tell him it's with the surgery.")),
      ],
      [
          "refill atorvastatin RX-4420917, the label on the bottle says 'no refills'",
          "REFILL_NOT_ALLOWED (code R7) on RX-7712004; the last fill allowed on it was in March",
          "Hi, I'm ringing for my dad, his blood pressure pills run out on Friday. The number is RX-6630158. The "
          "pharmacist told him last month that was the final fill on this script but he forgot to see his GP. Can you "
          "sort something out?",
          "patient used up all refills on sertraline RX-2209351, wants more",
      ]),
    F("rx-other-store-transfer", "pharmacy", RX_TOOLS, "rx-no-refills-renewal", "operation",
      "A prescription on file at another branch or pharmacy can't be refilled here: move it with transfer_rx to this "
      "store first, then refill (it usually still has refills left).",
      ["transfer_rx", "transfer"],
      [
          TX("wrong-alt+fail-fix-reasoned", "Refill RX-5512090 (metformin) for Mr. Osei, who used to fill at the Riverside branch", "success",
             U("Refill RX-5512090 for Mr. Osei, metformin. He used to fill at our Riverside branch."),
             E("refill_rx", {"rx": "RX-5512090"}, RX_ERR),
             R("Probably out of refills; ask his doctor for a renewal."),
             OK("contact_prescriber", {"rx": "RX-5512090", "request": "renewal"}, {"sent": True}),
             S("prescriber_reply", "4 refills remain; script is on file at Riverside #0412"),
             OK("transfer_rx", {"rx": "RX-5512090", "from_store": "0412", "to_store": "0388"}, {"transferred": True}),
             OK("refill_rx", {"rx": "RX-5512090"}, {"ready": "2026-02-11T15:00:00Z"}),
             FB("Got there, but the surgery was annoyed by a pointless renewal request.", "negative")),
          TX("rule-first", "Mrs. Haddad just moved here from Leeds and wants her levothyroxine refilled (RX-9034417)", "success",
             U("Mrs. Haddad just moved here from Leeds and wants her levothyroxine refilled, RX-9034417."),
             R("Her script lives at her old pharmacy; a refill here is refused until it has been moved to this store."),
             OK("get_rx", {"rx": "RX-9034417"}, {"store": "0921 (Leeds)", "refills_remaining": 3}),
             OK("transfer_rx", {"rx": "RX-9034417", "from_store": "0921", "to_store": "0388"}, {"transferred": True}),
             OK("refill_rx", {"rx": "RX-9034417"}, {"ready": "2026-02-12T10:00:00Z"})),
      ],
      [
          "refill RX-8830142, customer normally goes to our Northgate store",
          "REFILL_NOT_ALLOWED (code R7) for a new customer who just moved from Bristol, RX-5521077, label says 2 refills left",
          "Hello, I'm on holiday in your town for three weeks and I forgot to pack my thyroid tablets. My usual chemist "
          "is back home in Cardiff and the box says I still have refills. The number on it is RX-7019925. Could you "
          "give me some here?",
          "walk-in wants inhaler refilled; the script is with a different pharmacy",
      ]),

    F("ferry-overheight-class", "car-ferries", FERRY_TOOLS, "ferry-standby-last-minute", "operation",
      "Vehicles taller than 1.85 m (vans, campers, cars with a roof box or roof-mounted bikes) must be booked with "
      "vehicle_class 'overheight'; as a standard car they show no availability on decks they don't fit.",
      ["overheight", "over-height", "1.85"],
      [
          TX("fail-fix-reasoned", "Book the 10:30 Portsmouth-Caen sailing on 12 Aug for a VW California camper and 2 adults", "success",
             U("Book the 10:30 Portsmouth to Caen on 12 August for our VW California camper, 2 adults."),
             E("book_crossing", {"sailing": "PC-0812-1030", "vehicle_class": "car", "passengers": 2}, FERRY_ERR),
             R("The camper is about 2.0 m high. The standard car class only fits vehicles up to 1.85 m, so it has to "
               "go as overheight."),
             OK("book_crossing", {"sailing": "PC-0812-1030", "vehicle_class": "overheight", "height_m": 2.0, "passengers": 2},
                {"booking_ref": "FX-88310", "deck": 3})),
          TX("wrong-alt+user-corrects", "Car with a roof box on the Rosslare 20:45 sailing on 3 July", "partial",
             U("Car with a roof box on the Rosslare 20:45 sailing on 3 July, 2 adults and 2 kids."),
             E("book_crossing", {"sailing": "RF-0703-2045", "vehicle_class": "car", "passengers": 4}, FERRY_ERR),
             R("That sailing seems full; try the next day."),
             OK("get_sailings", {"route": "rosslare-fishguard", "date": "2026-07-04"}, [{"sailing": "RF-0704-2045", "status": "open"}]),
             E("book_crossing", {"sailing": "RF-0704-2045", "vehicle_class": "car", "passengers": 4}, FERRY_ERR),
             U("It's the roof box! With it the car is about 2.1 m. Book it as overheight, on the 3rd if you can."),
             E("book_crossing", {"sailing": "RF-0703-2045", "vehicle_class": "overheight", "height_m": 2.1, "passengers": 4},
               "NO_AVAILABILITY: overheight lanes sold out"),
             OK("book_crossing", {"sailing": "RF-0704-2045", "vehicle_class": "overheight", "height_m": 2.1, "passengers": 4},
                {"booking_ref": "FX-88457"}),
             FB("A day later than we wanted; if you'd asked about the height first we'd have got the 3rd.", "negative")),
      ],
      [
          "book Dover-Calais 07:20 for a Transit van, 2.4 m tall",
          "NO_AVAILABILITY for requested options: estate car with bikes on the roof, Holyhead 14:10 next Saturday",
          "We're taking the motorhome (a Hymer, about 2.9 m high) over to Bilbao in August with the kids and the dog. "
          "Every time I try to book the 14 August sailing the website says no availability, but my neighbour booked the "
          "same sailing with his Golf yesterday. What's going on?",
          "ferry booking fails for our high-top campervan",
      ]),
    F("ferry-standby-last-minute", "car-ferries", FERRY_TOOLS, "ferry-overheight-class", "operation",
      "Reservations close 2 hours before departure: for a sailing that leaves sooner, book with standby=true (or send "
      "the customer to the check-in desk) rather than retrying a normal reservation.",
      ["standby", "stand-by", "check-in desk"],
      [
          TX("blind-retries", "Book the 16:15 to Cherbourg today, car and 2 adults (it's 14:40)", "failure",
             U("Book us on the 16:15 to Cherbourg today, normal car and 2 adults. It's 14:40 now."),
             E("book_crossing", {"sailing": "CH-0611-1615", "vehicle_class": "car", "passengers": 2}, FERRY_ERR),
             E("book_crossing", {"sailing": "CH-0611-1615", "vehicle_class": "car", "passengers": 2}, FERRY_ERR),
             E("book_crossing", {"sailing": "CH-0611-1615", "vehicle_class": "car", "passengers": 2}, FERRY_ERR),
             FB("Online reservations close two hours before departure. You should have put us on standby; we missed "
                "the boat.", "negative")),
          TX("explain-after", "Get a small car and 1 adult onto the 09:00 Oban-Mull sailing, it's 08:05", "success",
             U("Can you get me (1 adult, small car) on the 09:00 Oban to Mull? It's 08:05."),
             E("book_crossing", {"sailing": "OM-0903-0900", "vehicle_class": "car", "passengers": 1}, FERRY_ERR),
             OK("book_crossing", {"sailing": "OM-0903-0900", "vehicle_class": "car", "passengers": 1, "standby": True},
                {"standby_ref": "SB-1187", "position": 3}),
             R("Done: you're third on the standby list. Sailings leaving within two hours can't be reserved normally, "
               "only as standby; be at the check-in booth by 08:40."),
             FB("Made it on, thanks!")),
      ],
      [
          "get us on the 18:00 to Santander, it's 16:55 now, ordinary hatchback",
          "NO_AVAILABILITY for requested options. The 11:30 sailing leaves in 50 minutes, normal saloon, 3 people",
          "We got to the port way earlier than planned because the motorway was empty, and there's a sailing in an hour "
          "and ten minutes instead of our booked one tonight. Could you put our car (a normal Fiesta) and the two of us "
          "on that one? The app says no availability.",
          "last-minute crossing today for a car, online says no availability",
      ]),

    F("museum-loan-condition-report", "museum-collections", LOAN_TOOLS, "museum-loan-insurance-value", "operation",
      "An object whose last condition report is older than 12 months can't go on loan: request a fresh one with "
      "request_condition_report, then create_loan.",
      ["condition report", "request_condition_report", "condition check"],
      [
          TX("fail-fix-silent", "Loan the Whitby jet brooch (OBJ-1987.201) to York Castle Museum, May-August", "success",
             U("Loan the Whitby jet brooch OBJ-1987.201 to York Castle Museum for May to August."),
             OK("get_object", {"object_id": "OBJ-1987.201"}, {"title": "Mourning brooch, Whitby jet", "last_condition_report": "2019-10-02"}),
             E("create_loan", {"object_id": "OBJ-1987.201", "borrower": "York Castle Museum", "from": "2026-05-01", "to": "2026-08-31"}, LOAN_ERR),
             OK("request_condition_report", {"object_id": "OBJ-1987.201", "purpose": "outgoing loan"}, {"report_id": "CR-3308", "status": "completed"}),
             OK("create_loan", {"object_id": "OBJ-1987.201", "borrower": "York Castle Museum", "from": "2026-05-01", "to": "2026-08-31"},
                {"loan_id": "LN-0912", "status": "approved"})),
          TX("rule-first", "Lend the 1760s longcase clock (OBJ-1954.009) to the Beamish open-air museum", "success",
             U("Lend the longcase clock OBJ-1954.009 to Beamish for their Georgian week."),
             R("Loans need a condition report from the last 12 months. Check the object's record first."),
             OK("get_object", {"object_id": "OBJ-1954.009"}, {"last_condition_report": "2023-01-15", "location": "store B"}),
             OK("request_condition_report", {"object_id": "OBJ-1954.009", "purpose": "outgoing loan"}, {"report_id": "CR-3351", "status": "completed"}),
             OK("create_loan", {"object_id": "OBJ-1954.009", "borrower": "Beamish", "from": "2026-09-01", "to": "2026-09-30"},
                {"loan_id": "LN-0930", "status": "approved"})),
      ],
      [
          "loan the 1880s sampler (OBJ-1998.44) to Hull Maritime Museum for their spring show",
          "LOAN_BLOCKED: object not cleared for loan. Regional loan, the painting hasn't left storage since 2016",
          "The little museum in the next town over has asked to borrow our three Victorian christening gowns "
          "(OBJ-2001.17, .18, .19) for a six-week display. Nobody has looked at them since they went into the textile "
          "store years ago. The system won't let me create the loan. Can you do it?",
          "outgoing loan to a museum in the same county for OBJ-2003.118 is blocked",
      ]),
    F("museum-loan-insurance-value", "museum-collections", LOAN_TOOLS, "museum-loan-condition-report", "operation",
      "Loans to a borrower abroad need an agreed insurance value (nail-to-nail) in the borrower's currency, set with "
      "set_insurance_value before create_loan.",
      ["set_insurance_value", "insurance value", "indemnity"],
      [
          TX("wrong-alt+fail-fix-reasoned", "Lend the Turner watercolour OBJ-1961.77 to the Museo Thyssen in Madrid", "success",
             U("Lend the Turner watercolour OBJ-1961.77 to the Museo Thyssen in Madrid, October to January."),
             E("create_loan", {"object_id": "OBJ-1961.77", "borrower": "Museo Thyssen", "from": "2026-10-01", "to": "2027-01-15"}, LOAN_ERR),
             R("Probably needs a fresh condition report."),
             OK("request_condition_report", {"object_id": "OBJ-1961.77", "purpose": "outgoing loan"}, {"report_id": "CR-3402", "status": "completed"}),
             E("create_loan", {"object_id": "OBJ-1961.77", "borrower": "Museo Thyssen", "from": "2026-10-01", "to": "2027-01-15"}, LOAN_ERR),
             OK("get_object", {"object_id": "OBJ-1961.77"}, {"last_condition_report": "2026-02-10",
                                                             "clearance": {"condition": "ok", "insurance": "missing (international loan)"}}),
             R("The condition report was already recent. International loans need an agreed insurance value in the "
               "borrower's currency."),
             OK("set_insurance_value", {"object_id": "OBJ-1961.77", "amount": 1200000, "currency": "EUR", "basis": "nail-to-nail"}, {"set": True}),
             OK("create_loan", {"object_id": "OBJ-1961.77", "borrower": "Museo Thyssen", "from": "2026-10-01", "to": "2027-01-15"},
                {"loan_id": "LN-0951", "status": "approved"})),
          TX("user-corrects", "Loan the Satsuma vase pair OBJ-1930.5a-b to the Kyoto National Museum", "success",
             U("Loan the Satsuma vase pair OBJ-1930.5a-b to the Kyoto National Museum for the spring exhibition."),
             E("create_loan", {"object_id": "OBJ-1930.5a-b", "borrower": "Kyoto National Museum", "from": "2027-03-01", "to": "2027-05-31"}, LOAN_ERR),
             R("I'll request a condition report first."),
             U("They were checked in January, that's not it. Kyoto is abroad: the loan needs the insurance value agreed "
               "with them, 18 million yen for the pair."),
             OK("set_insurance_value", {"object_id": "OBJ-1930.5a-b", "amount": 18000000, "currency": "JPY", "basis": "nail-to-nail"}, {"set": True}),
             OK("create_loan", {"object_id": "OBJ-1930.5a-b", "borrower": "Kyoto National Museum", "from": "2027-03-01", "to": "2027-05-31"},
                {"loan_id": "LN-0977", "status": "approved"}),
             FB("Thanks.")),
      ],
      [
          "loan OBJ-1975.12 to the Rijksmuseum, June to September",
          "LOAN_BLOCKED: object not cleared for loan. Borrower is in Osaka; condition was checked last month",
          "The National Gallery of Canada would like our two Gainsborough sketches (OBJ-1948.3 and OBJ-1948.4) for a "
          "touring show next year. Conservation went over them in the spring and they're fine to travel. The loan "
          "record just won't save. Any idea what it wants?",
          "outgoing loan to a museum in Chicago won't save",
      ]),

    F("wms-replenish-pick-face", "warehouse", WMS_TOOLS, "wms-case-unit-of-measure", "operation",
      "When the pick face is short but reserve locations (high racks) hold stock, replenish first: move_stock from "
      "the reserve location to the pick face, then create_pick.",
      ["move_stock", "replenish", "reserve location"],
      [
          TX("fail-fix-reasoned", "Create the pick for order SO-77120: 90 units of SKU 40-2231", "success",
             U("Create the pick for order SO-77120, 90 units of SKU 40-2231."),
             E("create_pick", {"order": "SO-77120", "sku": "40-2231", "qty": 90, "uom": "EA"}, WMS_ERR),
             OK("get_stock", {"sku": "40-2231"}, {"pick_face": {"loc": "A-11-01", "qty": 14},
                                                 "reserve": [{"loc": "R-04-05-C", "qty": 480}], "pick_uom": "EA"}),
             R("Only 14 at the pick face but 480 in reserve. Replenish the pick face from the reserve location, then pick."),
             OK("move_stock", {"sku": "40-2231", "from": "R-04-05-C", "to": "A-11-01", "qty": 120}, {"task_id": "MV-5510", "status": "done"}),
             OK("create_pick", {"order": "SO-77120", "sku": "40-2231", "qty": 90, "uom": "EA"}, {"pick_id": "PK-99021"})),
          TX("long-noisy+fail-fix-silent", "Release wave 14 (orders SO-77301 to SO-77309)", "success",
             U("Release wave 14, orders SO-77301 to SO-77309. Carrier cut-off is 16:00."),
             OK("create_pick", {"order": "SO-77301", "sku": "11-0090", "qty": 4, "uom": "EA"}, {"pick_id": "PK-99101"}),
             OK("create_pick", {"order": "SO-77302", "sku": "11-0142", "qty": 2, "uom": "EA"}, {"pick_id": "PK-99102"}),
             E("create_pick", {"order": "SO-77303", "sku": "27-5518", "qty": 40, "uom": "EA"}, WMS_ERR),
             OK("get_stock", {"sku": "27-5518"}, {"pick_face": {"loc": "C-02-03", "qty": 6}, "reserve": [{"loc": "R-09-01-A", "qty": 300}]}),
             OK("move_stock", {"sku": "27-5518", "from": "R-09-01-A", "to": "C-02-03", "qty": 60}, {"task_id": "MV-5533", "status": "done"}),
             OK("create_pick", {"order": "SO-77303", "sku": "27-5518", "qty": 40, "uom": "EA"}, {"pick_id": "PK-99103"}),
             OK("create_pick", {"order": "SO-77304", "sku": "11-0090", "qty": 1, "uom": "EA"}, {"pick_id": "PK-99104"}),
             S("wave.14.lines", "9 of 9 picks created"),
             OK("release_wave", {"wave": 14}, {"released": True, "pickers_assigned": 3}),
             FB("Released in time.")),
      ],
      [
          "pick for SO-88123, 60 units of SKU 40-1187; pick face shows 12 but there are two full pallets up in the racks",
          "PICK_FAILED: insufficient pickable quantity at pick face. SKU 22-0913, the order needs 200, slot A-14-02 nearly empty",
          "Wave 7 is stuck: one line for SKU 18-7742 won't create its pick. Stock on hand says 900 units, the "
          "picker says the slot on the floor has maybe a dozen, and the rest is on pallets upstairs. Can you get the "
          "line picked so the wave goes out before the 15:00 truck?",
          "pick line short at the slot, plenty of stock in the building",
      ]),
    F("wms-case-unit-of-measure", "warehouse", WMS_TOOLS, "wms-replenish-pick-face", "operation",
      "Case-picked SKUs are picked in whole cases: convert the ordered eaches into cases (uom 'CS'; 48 bottles = 4 cases of "
      "12) instead of asking the pick face for eaches; moving more stock doesn't help.",
      ["case-picked", "pack size", "whole cases"],
      [
          TX("wrong-alt+blind-retries", "Create the pick for SO-80455: 48 bottles of SKU 60-0217 (olive oil)", "failure",
             U("Create the pick for SO-80455: 48 bottles of SKU 60-0217, olive oil 750 ml."),
             E("create_pick", {"order": "SO-80455", "sku": "60-0217", "qty": 48, "uom": "EA"}, WMS_ERR),
             R("The pick face must be short; replenish it from reserve."),
             OK("move_stock", {"sku": "60-0217", "from": "R-02-07-B", "to": "B-05-01", "qty": 240}, {"task_id": "MV-5601", "status": "done"}),
             E("create_pick", {"order": "SO-80455", "sku": "60-0217", "qty": 48, "uom": "EA"}, WMS_ERR),
             E("create_pick", {"order": "SO-80455", "sku": "60-0217", "qty": 48, "uom": "EA"}, WMS_ERR),
             FB("The pick face already had 30 cases. That SKU is case-picked, 12 bottles a case, so the pick is 4 CS. "
                "You moved a pallet for nothing.", "negative")),
          TX("fail-fix-silent", "Pick 36 jars of SKU 51-0103 (honey) for SO-80612", "success",
             U("Pick 36 jars of SKU 51-0103, honey, for SO-80612."),
             E("create_pick", {"order": "SO-80612", "sku": "51-0103", "qty": 36, "uom": "EA"}, WMS_ERR),
             OK("get_stock", {"sku": "51-0103"}, {"pick_face": {"loc": "D-01-04", "qty": 22, "uom": "CS"}, "pack_size": 6, "pick_uom": "CS"}),
             OK("create_pick", {"order": "SO-80612", "sku": "51-0103", "qty": 6, "uom": "CS"}, {"pick_id": "PK-99310"})),
      ],
      [
          "order SO-90211: 36 tins of SKU 51-0044, stored 12 to a carton",
          "PICK_FAILED insufficient pickable quantity at pick face, 24 bottles of vinegar; the location shows 40 cartons",
          "Hi, I'm new on the desk. A café chain ordered 72 cans of oat milk (SKU 33-4410) and the system won't create "
          "the pick, although the slot is absolutely full of boxes when I walk past it. Did I type something wrong?",
          "pick for 96 cans fails even though the slot is full",
      ]),

    F("fishing-species-codes", "fishing-catch-reports", ["get_vessel", "list_species_codes", "submit_catch_report"], None, "operation",
      "Catch reports take species as FAO 3-alpha codes (COD, HAD, MNZ, HKE...), not common names; look them up with "
      "list_species_codes when unsure.",
      ["fao", "3-alpha", "list_species_codes"],
      [
          TX("fail-fix-reasoned", "Log today's landing for FV Sula Bhan (BF-221): 420 kg haddock and 95 kg monkfish", "success",
             U("Log today's landing for FV Sula Bhan, BF-221: 420 kg haddock and 95 kg monkfish."),
             OK("get_vessel", {"pln": "BF-221"}, {"name": "Sula Bhan", "licence": "active"}),
             E("submit_catch_report", {"pln": "BF-221", "date": "2026-10-06", "catch": [{"species": "haddock", "kg": 420},
                                                                                       {"species": "monkfish", "kg": 95}]},
               "CATCH_REJECTED: unknown species 'haddock'"),
             R("The report wants species codes, not names. Look them up."),
             OK("list_species_codes", {"names": ["haddock", "monkfish"]}, {"haddock": "HAD", "monkfish": "MNZ"}),
             OK("submit_catch_report", {"pln": "BF-221", "date": "2026-10-06", "catch": [{"species": "HAD", "kg": 420},
                                                                                        {"species": "MNZ", "kg": 95}]},
                {"report_id": "CR-2026-55810", "status": "accepted"})),
          TX("explain-after", "Catch report for FV Morven (LK-88): 1.2 t mackerel", "success",
             U("Catch report for FV Morven, LK-88: 1.2 tonnes of mackerel, landed Lerwick this morning."),
             E("submit_catch_report", {"pln": "LK-88", "date": "2026-10-07", "catch": [{"species": "mackerel", "kg": 1200}]},
               "CATCH_REJECTED: unknown species 'mackerel'"),
             OK("submit_catch_report", {"pln": "LK-88", "date": "2026-10-07", "catch": [{"species": "MAC", "kg": 1200}]},
                {"report_id": "CR-2026-55871", "status": "accepted"}),
             R("Accepted. The system only knows FAO 3-alpha species codes (mackerel is MAC), not common names.")),
      ],
      [
          "log the landing for FV Morning Star (PD-410): 340 kg hake and 120 kg lemon sole",
          "CATCH_REJECTED: unknown species 'whiting'",
          "Skipper here, just tied up in Peterhead. We had a decent trip: about 600 kilos of cod, some plaice, and a "
          "box of megrim. I tried sending it from the wheelhouse tablet and it threw everything back at me. Can you "
          "put it in for us? Boat's PD-77.",
          "catch report with ordinary fish names bounced",
      ]),
]
