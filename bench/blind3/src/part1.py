"""Families 1-12: veterinary clinic, reefer containers, clinical lab, residential parking, solar
inverter fleet, dental lab, meal-kit subscriptions."""
from dsl import E, F, FB, OK, R, S, TX, U

VET_TOOLS = ["get_patient", "book_appointment", "record_weight", "list_departments"]
VET_ERR = "422 BOOKING_REJECTED: patient not eligible for this appointment type"

REEFER_TOOLS = ["get_container", "set_setpoint", "set_mode", "start_pretrip"]
REEFER_ERR = "SETPOINT_REJECTED: value outside operating range for current mode"

LIMS_TOOLS = ["get_sample", "assign_test", "split_aliquot", "list_panels"]
LIMS_ERR = "ASSIGN_FAILED: insufficient volume for requested test(s)"

PARK_TOOLS = ["issue_permit", "lookup_vehicle", "add_vehicle_to_account", "get_zone"]
PARK_ERR = "PERMIT_DENIED: vehicle not found on resident account"

SOLAR_TOOLS = ["get_inverter", "push_firmware", "schedule_job", "reboot_inverter"]
SOLAR_ERR = "UPDATE_REJECTED: preconditions not met"

FAMILIES = [
    F("vet-anesthesia-recent-weight", "veterinary-clinic", VET_TOOLS, "vet-species-department", "operation",
      "Before booking any procedure under general anaesthesia (dental scale, spay/neuter, lump removal), record the "
      "animal's current weight with record_weight (kg, taken within the last 30 days); the booking is refused "
      "without a recent weight because the anaesthetist doses from it.",
      ["record_weight", "current weight", "weigh"],
      [
          TX("fail-fix-reasoned+asks-user", "Book Biscuit (beagle, P-20931) for a dental scale and polish next Tuesday morning", "success",
             U("Book Biscuit (patient P-20931, beagle) in for a dental scale and polish next Tuesday morning please."),
             OK("get_patient", {"patient_id": "P-20931"}, {"name": "Biscuit", "species": "canine", "breed": "beagle",
                                                           "last_weight": {"kg": 14.2, "date": "2025-11-02"}}),
             E("book_appointment", {"patient_id": "P-20931", "type": "dental_ga", "date": "2026-03-10", "slot": "09:00"}, VET_ERR),
             R("Dental scale is done under general anaesthesia. The only weight on file is four months old; the clinic "
               "doses anaesthetic from a weight taken in the last 30 days. I need a fresh weight before booking."),
             R("Asking the user: do you have Biscuit's weight from the last few weeks?"),
             U("The owner weighed him at the groomer's yesterday, 14.8 kg."),
             OK("record_weight", {"patient_id": "P-20931", "kg": 14.8, "measured_on": "2026-03-02"}, {"recorded": True}),
             OK("book_appointment", {"patient_id": "P-20931", "type": "dental_ga", "date": "2026-03-10", "slot": "09:00"},
                {"appointment_id": "AP-55102", "status": "confirmed", "vet": "Dr. Lindqvist"}),
             FB("Booked, thanks.")),
          TX("rule-first", "Spay booking for Mochi the cat (P-33107), any day next week", "success",
             U("Mochi (P-33107, domestic shorthair) needs spaying, any day next week. The owner says she was 3.9 kg at the nurse check this morning."),
             R("A spay is under general anaesthesia, and those bookings need a weight from the last 30 days on the record. "
               "The owner gave one from this morning, so I record it first and then book."),
             OK("record_weight", {"patient_id": "P-33107", "kg": 3.9, "measured_on": "2026-04-06"}, {"recorded": True}),
             OK("book_appointment", {"patient_id": "P-33107", "type": "spay_neuter", "date": "2026-04-14", "slot": "08:30"},
                {"appointment_id": "AP-56210", "status": "confirmed"}),
             FB("Perfect.")),
      ],
      [
          "Book Rufus (P-11842, lab cross) for a lump removal on the 14th",
          "booking rejected 'patient not eligible for this appointment type' for a dog's dental under GA",
          "Hi! Our labrador Maisie (patient P-67012) needs to be spayed; the vet said she could do it next Friday. The "
          "online booking keeps telling me she's not eligible for this appointment type, which makes no sense, she's "
          "been a patient for six years. Could you sort it out for me?",
          "Schedule a tooth extraction under sedation for Tom the tabby, P-22590",
      ]),
    F("vet-species-department", "veterinary-clinic", VET_TOOLS, "vet-anesthesia-recent-weight", "operation",
      "Rabbits, guinea pigs, birds, reptiles and ferrets can't be booked into the general (dogs and cats) clinic: "
      "book them with department 'exotics' (list_departments shows which species each department sees).",
      ["exotics", "exotic"],
      [
          TX("wrong-alt+fail-fix-reasoned", "Book Pepper the rabbit (P-41550) for a dental, overgrown incisors", "success",
             U("Book Pepper the rabbit (P-41550) for a dental, her incisors are overgrown again."),
             E("book_appointment", {"patient_id": "P-41550", "type": "dental_ga", "date": "2026-05-05"}, VET_ERR),
             R("Dental under anaesthesia: probably the weight is missing on the record."),
             OK("record_weight", {"patient_id": "P-41550", "kg": 1.6, "measured_on": "2026-05-01"}, {"recorded": True}),
             E("book_appointment", {"patient_id": "P-41550", "type": "dental_ga", "date": "2026-05-05"}, VET_ERR),
             OK("list_departments", {}, [{"id": "general", "species": ["canine", "feline"]},
                                        {"id": "exotics", "species": ["lagomorph", "rodent", "avian", "reptile", "mustelid"]}]),
             R("The general clinic only sees dogs and cats. A rabbit is a lagomorph, so she must be booked under exotics."),
             OK("book_appointment", {"patient_id": "P-41550", "type": "dental_ga", "date": "2026-05-05", "department": "exotics"},
                {"appointment_id": "AP-57001", "status": "confirmed", "vet": "Dr. Okafor"})),
          TX("blind-retries", "Get Kiwi the cockatiel (P-50218) in for a nail and beak trim on Thursday", "failure",
             U("Get Kiwi the cockatiel (P-50218) in for a nail and beak trim on Thursday."),
             E("book_appointment", {"patient_id": "P-50218", "type": "grooming_minor", "date": "2026-05-07"}, VET_ERR),
             E("book_appointment", {"patient_id": "P-50218", "type": "grooming_minor", "date": "2026-05-07"}, VET_ERR),
             E("book_appointment", {"patient_id": "P-50218", "type": "grooming_minor", "date": "2026-05-07"}, VET_ERR),
             FB("You kept booking a bird into the general clinic. Birds, rabbits, rodents, reptiles and ferrets have to go "
                "to the exotics department.", "negative")),
      ],
      [
          "Book my ferret Loki (P-73310) for his annual check and vaccine",
          "BOOKING_REJECTED not eligible: bearded dragon P-81204, vet check Monday",
          "hey, my daughter's guinea pig Toffee (P-60077) hasn't touched her hay since Sunday and we'd like her seen "
          "tomorrow if at all possible. The booking page just keeps saying patient not eligible for this appointment "
          "type. Can you get her in?",
          "Appointment for a budgie, P-91402, wing clip",
      ]),

    F("reefer-fahrenheit-setpoint", "reefer-containers", REEFER_TOOLS, "reefer-frozen-mode", "operation",
      "The reefer controller takes setpoints in degrees Celsius; shipper instructions from US customers are in "
      "Fahrenheit, so convert ((F - 32) x 5/9, one decimal) before set_setpoint.",
      ["celsius", "convert", "°c"],
      [
          TX("fail-fix-silent", "Set MSKU 884120-3 to 34 F for the apple load, booking BK-7781 from Savannah", "success",
             U("Booking BK-7781 out of Savannah: set MSKU 884120-3 to 34 F, apples."),
             E("set_setpoint", {"container": "MSKU8841203", "setpoint": 34}, REEFER_ERR),
             OK("set_setpoint", {"container": "MSKU8841203", "setpoint": 1.1}, {"setpoint": 1.1, "mode": "chilled"}),
             S("MSKU8841203.setpoint", 1.1)),
          TX("explain-after", "Chicago shipper wants the pharma load in TGHU 551902-7 at 46°F", "success",
             U("Shipper in Chicago wants the pharma load in TGHU 551902-7 carried at 46°F."),
             E("set_setpoint", {"container": "TGHU5519027", "setpoint": 46}, REEFER_ERR),
             OK("set_setpoint", {"container": "TGHU5519027", "setpoint": 7.8}, {"setpoint": 7.8, "mode": "chilled"}),
             R("That worked. The controller reads the setpoint in Celsius; the shipper's 46 was Fahrenheit, which is 7.8 °C."),
             FB("Good catch on the units.")),
      ],
      [
          "set reefer SEGU 119034-2 to 38F for a lettuce load",
          "SETPOINT_REJECTED: value outside operating range for current mode. Shipper (Ohio dairy) asked for 55 degrees for the cheese",
          "Morning! The instruction sheet from the Memphis shipper says carrying temperature 33 deg F, vents closed, "
          "humidity off. Could you set container OOLU 620331-9 to that for booking BK-3310? It's going on the 14:00 vessel.",
          "Temp for TCNU 771245-0 per the Houston shipper: 45 F",
      ]),
    F("reefer-frozen-mode", "reefer-containers", REEFER_TOOLS, "reefer-fahrenheit-setpoint", "operation",
      "A unit in chilled mode rejects setpoints below -10; for frozen cargo switch the unit to frozen mode with "
      "set_mode first, then set the setpoint.",
      ["set_mode", "frozen mode"],
      [
          TX("wrong-alt+user-corrects", "Container CAIU 730215-1 is loading frozen shrimp, set it to -20", "partial",
             U("Container CAIU 730215-1 is loading frozen shrimp, set it to -20."),
             E("set_setpoint", {"container": "CAIU7302151", "setpoint": -20}, REEFER_ERR),
             R("Out of range. Perhaps the controller wants Fahrenheit: -20 C is -4 F."),
             OK("set_setpoint", {"container": "CAIU7302151", "setpoint": -4}, {"setpoint": -4, "mode": "chilled"}),
             U("Why does the display show -4 C?! Shrimp travel at minus 20! The box was in chilled mode from the last trip."),
             OK("set_mode", {"container": "CAIU7302151", "mode": "frozen"}, {"mode": "frozen"}),
             OK("set_setpoint", {"container": "CAIU7302151", "setpoint": -20}, {"setpoint": -20, "mode": "frozen"}),
             FB("Fixed, but the unit sat at -4 for twenty minutes during stuffing. Frozen loads: change the mode first.", "negative")),
          TX("rule-first", "Set TRLU 402118-6 to -25 for ice cream, booking BK-9020", "success",
             U("Set TRLU 402118-6 to -25 for ice cream, booking BK-9020."),
             R("Below -10 the controller has to be in frozen mode; chilled mode refuses such setpoints. Check the current mode first."),
             OK("get_container", {"container": "TRLU4021186"}, {"mode": "chilled", "setpoint": 13.0, "last_cargo": "bananas"}),
             OK("set_mode", {"container": "TRLU4021186", "mode": "frozen"}, {"mode": "frozen"}),
             OK("set_setpoint", {"container": "TRLU4021186", "setpoint": -25}, {"setpoint": -25, "mode": "frozen"})),
      ],
      [
          "set SZLU 905512-3 to -18 for a load of chicken thighs going out deep-frozen",
          "Reefer won't take -22 for the tuna in CXRU 118820-4: value outside operating range for current mode",
          "We've got a load of frozen peas leaving tonight in MNBU 300417-5; on its last leg it carried avocados. Please "
          "get it down to minus 23 before stuffing starts at 18:00, the warehouse won't load a warm box.",
          "ice cream booking BK-4471, box needs -28",
      ]),

    F("lims-split-aliquots", "clinical-lab", LIMS_TOOLS, "lims-pediatric-micro-panel", "operation",
      "When several tests are ordered on one adult primary tube, split it into aliquots with split_aliquot and assign "
      "one test per aliquot; the primary tube keeps a reserve, so assigning many tests to it fails on volume.",
      ["split_aliquot", "aliquot"],
      [
          TX("fail-fix-reasoned", "Sample S-240118-0442 (serum, 5 mL) needs CMP, lipid panel and TSH", "success",
             U("Sample S-240118-0442 (serum, 5 mL) needs CMP, lipid panel and TSH."),
             OK("get_sample", {"sample_id": "S-240118-0442"}, {"type": "serum", "volume_ml": 5.0, "patient_age": 54}),
             E("assign_test", {"sample_id": "S-240118-0442", "tests": ["CMP", "LIPID", "TSH"]},
               LIMS_ERR + " (primary container reserve 4.0 mL)"),
             R("The primary tube keeps 4 mL in reserve and each analyser needs its own container. Split it into three "
               "aliquots and put one test on each."),
             OK("split_aliquot", {"sample_id": "S-240118-0442", "count": 3, "volume_ml": 0.3},
                {"aliquots": ["S-240118-0442-A1", "S-240118-0442-A2", "S-240118-0442-A3"]}),
             OK("assign_test", {"sample_id": "S-240118-0442-A1", "tests": ["CMP"]}, {"assigned": 1}),
             OK("assign_test", {"sample_id": "S-240118-0442-A2", "tests": ["LIPID"]}, {"assigned": 1}),
             OK("assign_test", {"sample_id": "S-240118-0442-A3", "tests": ["TSH"]}, {"assigned": 1})),
          TX("long-noisy+fail-fix-silent", "Process the morning batch: S-240119-0510 needs HbA1c, S-240119-0511 needs ferritin, B12 and folate", "success",
             U("Process the morning batch: S-240119-0510 needs HbA1c; S-240119-0511 needs ferritin, B12 and folate. "
               "Also tell me if anything is haemolysed."),
             OK("get_sample", {"sample_id": "S-240119-0510"}, {"type": "whole_blood_edta", "volume_ml": 3.0, "haemolysis": "none"}),
             OK("assign_test", {"sample_id": "S-240119-0510", "tests": ["HBA1C"]}, {"assigned": 1}),
             OK("get_sample", {"sample_id": "S-240119-0511"}, {"type": "serum", "volume_ml": 6.0, "haemolysis": "slight"}),
             S("batch.note", "S-240119-0511 slightly haemolysed, acceptable for ferritin/B12/folate"),
             E("assign_test", {"sample_id": "S-240119-0511", "tests": ["FERR", "B12", "FOL"]}, LIMS_ERR),
             OK("split_aliquot", {"sample_id": "S-240119-0511", "count": 3, "volume_ml": 0.4},
                {"aliquots": ["S-240119-0511-A1", "S-240119-0511-A2", "S-240119-0511-A3"]}),
             OK("assign_test", {"sample_id": "S-240119-0511-A1", "tests": ["FERR"]}, {"assigned": 1}),
             OK("assign_test", {"sample_id": "S-240119-0511-A2", "tests": ["B12"]}, {"assigned": 1}),
             OK("assign_test", {"sample_id": "S-240119-0511-A3", "tests": ["FOL"]}, {"assigned": 1}),
             S("batch.status", "complete"),
             FB("Thanks, and noted on the haemolysis.")),
      ],
      [
          "S-250302-0118: order CMP + TSH + vitamin D on the same tube",
          "assign failed, insufficient volume for requested test(s). Adult serum, 6 mL, three tests ordered",
          "Dr. Patel has added a lipid panel and a ferritin to the renal panel that was already requested on sample "
          "S-250302-0230. It's an adult outpatient, there's plenty of serum (about 7 mL), but the LIMS refuses to take "
          "the extra tests. What's going on?",
          "add ferritin, folate and B12 to S-250303-0007",
      ]),
    F("lims-pediatric-micro-panel", "clinical-lab", LIMS_TOOLS, "lims-split-aliquots", "operation",
      "Neonatal and paediatric low-volume samples must be assigned the micro variant of the panel (list_panels shows "
      "e.g. CMP-MICRO, NEO-MICRO-BILI-LYTES); splitting such a tube fails on minimum volume and wastes sample.",
      ["micro", "list_panels"],
      [
          TX("wrong-alt+fail-fix-reasoned", "NICU sample S-240120-0931 (0.6 mL heel stick) needs bilirubin and electrolytes", "success",
             U("NICU sample S-240120-0931 (0.6 mL heel stick) needs bilirubin and electrolytes."),
             E("assign_test", {"sample_id": "S-240120-0931", "tests": ["BILI", "LYTES"]}, LIMS_ERR),
             R("Two tests on one tube; split it into aliquots."),
             E("split_aliquot", {"sample_id": "S-240120-0931", "count": 2, "volume_ml": 0.3},
               "SPLIT_FAILED: minimum aliquot volume 0.5 mL"),
             OK("list_panels", {"analyte": "bilirubin"}, [{"code": "BILI", "min_ml": 0.5},
                                                          {"code": "NEO-MICRO-BILI-LYTES", "min_ml": 0.15, "note": "micro volume, combined"}]),
             R("There is a micro panel that runs both on 0.15 mL from the original tube."),
             OK("assign_test", {"sample_id": "S-240120-0931", "tests": ["NEO-MICRO-BILI-LYTES"]}, {"assigned": 1})),
          TX("user-corrects", "Sample S-240121-1120 from a 2-year-old, 0.4 mL, CMP please", "success",
             U("Sample S-240121-1120, 2-year-old, 0.4 mL, CMP please."),
             E("assign_test", {"sample_id": "S-240121-1120", "tests": ["CMP"]}, LIMS_ERR),
             R("I'll split it into aliquots so the analyser gets its own container."),
             U("No, don't split a paediatric tube, there's barely anything in it. Use the micro version of the panel."),
             OK("list_panels", {"analyte": "CMP"}, [{"code": "CMP", "min_ml": 1.0}, {"code": "CMP-MICRO", "min_ml": 0.2}]),
             OK("assign_test", {"sample_id": "S-240121-1120", "tests": ["CMP-MICRO"]}, {"assigned": 1}),
             FB("Right, that's the one.")),
      ],
      [
          "neonatal heel-prick S-250302-0777, 0.3 mL, needs glucose and calcium",
          "insufficient volume for requested test(s) on a toddler's tube (0.5 mL), CMP ordered",
          "The children's ward sent over a tiny tube from a 3-month-old, S-250304-0042, maybe 0.35 mL in it, with a "
          "request for liver function tests. The system won't assign it. We can't ask for another draw, the baby's "
          "veins are awful. Can you get it on the analyser?",
          "infant sample, bilirubin ordered, LIMS rejects on volume",
      ]),

    F("parking-plate-format", "residential-parking", PARK_TOOLS, "parking-vehicle-not-on-account", "operation",
      "Plates must be sent upper case with no spaces or dashes ('lb 62 xtm' -> 'LB62XTM'); the raw plate as typed "
      "by the resident is not found even when the car is on the account.",
      ["upper case", "without spaces", "no spaces"],
      [
          TX("blind-retries", "Issue a zone C residential permit for account R-55120, plate 'lb 62 xtm'", "failure",
             U("Issue a zone C residential permit for account R-55120, plate 'lb 62 xtm'."),
             E("issue_permit", {"account": "R-55120", "zone": "C", "plate": "lb 62 xtm"}, PARK_ERR),
             E("issue_permit", {"account": "R-55120", "zone": "C", "plate": "lb 62 xtm"}, PARK_ERR),
             E("issue_permit", {"account": "R-55120", "zone": "C", "plate": "lb 62 xtm"}, PARK_ERR),
             FB("The car has been on that account for years. The system wants the plate as LB62XTM: upper case, no "
                "spaces. Retrying the same thing three times didn't help.", "negative")),
          TX("fail-fix-silent", "Annual zone F permit for resident R-61002, plate 'GT-418-PW'", "success",
             U("Annual zone F permit for resident R-61002, plate 'GT-418-PW'."),
             E("issue_permit", {"account": "R-61002", "zone": "F", "plate": "GT-418-PW"}, PARK_ERR),
             OK("lookup_vehicle", {"plate": "GT418PW"}, {"found": True, "account": "R-61002"}),
             OK("issue_permit", {"account": "R-61002", "zone": "F", "plate": "GT418PW"}, {"permit_id": "PM-300871", "valid_to": "2027-03-31"})),
      ],
      [
          "permit for plate 'ef 19 tpz', account R-40021, zone B",
          "PERMIT_DENIED vehicle not found on resident account. Plate typed as 'MK-552-RT'; the car has been on the account since 2021",
          "hi, my permit renewal keeps failing. my account is R-33980 and the car's definitely on there, the plate is "
          "'wd 70 ayk' exactly as it's printed on the logbook. it worked last year when i did it by phone. can you renew "
          "it for zone E?",
          "renew zone D permit R-91177 plate 'pk 08-hny'",
      ]),
    F("parking-vehicle-not-on-account", "residential-parking", PARK_TOOLS, "parking-plate-format", "operation",
      "A car the resident has just bought, leased, borrowed or hired is not on their account yet: add it with "
      "add_vehicle_to_account (with the logbook, lease or loan agreement) before issue_permit.",
      ["add_vehicle_to_account", "add the vehicle", "add the car"],
      [
          TX("wrong-alt+fail-fix-reasoned", "R-70233 just bought a new car, plate HN73 KRV, move their permit to it", "success",
             U("R-70233 just bought a new car, plate HN73 KRV. Please move their permit over."),
             E("issue_permit", {"account": "R-70233", "zone": "A", "plate": "HN73 KRV"}, PARK_ERR),
             R("Maybe the space in the plate."),
             E("issue_permit", {"account": "R-70233", "zone": "A", "plate": "HN73KRV"}, PARK_ERR),
             OK("lookup_vehicle", {"plate": "HN73KRV"}, {"found": True, "account": None, "keeper_since": "2026-02-27"}),
             R("The vehicle exists but isn't linked to any account: a newly bought car has to be added to the resident's "
               "account before a permit can be issued for it."),
             OK("add_vehicle_to_account", {"account": "R-70233", "plate": "HN73KRV", "document": "logbook-8812.pdf"}, {"linked": True}),
             OK("issue_permit", {"account": "R-70233", "zone": "A", "plate": "HN73KRV"}, {"permit_id": "PM-301122"})),
          TX("asks-user", "Resident R-80110 has a courtesy car from the garage (YD24ZPN) while theirs is repaired", "success",
             U("Resident R-80110 has a courtesy car from the garage while theirs is being repaired, plate YD24ZPN. They need to park it."),
             E("issue_permit", {"account": "R-80110", "zone": "C", "plate": "YD24ZPN"}, PARK_ERR),
             R("A courtesy car isn't on the resident's account; it has to be linked with the loan agreement first. "
               "Asking the user: can the resident send the garage's loan agreement?"),
             U("Here it is: loan-agreement-YD24ZPN.pdf, until 20 March."),
             OK("add_vehicle_to_account", {"account": "R-80110", "plate": "YD24ZPN", "document": "loan-agreement-YD24ZPN.pdf",
                                           "until": "2026-03-20"}, {"linked": True, "temporary": True}),
             OK("issue_permit", {"account": "R-80110", "zone": "C", "plate": "YD24ZPN"}, {"permit_id": "PM-301340", "valid_to": "2026-03-20"}),
             FB("Sorted, thank you.")),
      ],
      [
          "Resident R-22741 traded in their Corsa; the replacement, LC25UWX, needs the zone A permit",
          "PERMIT_DENIED vehicle not found on resident account. It's a hire car while hers is at the bodyshop, RX25OJN",
          "My partner moved in with me last week and brought his car (BF71GHD). We're both on household account "
          "R-60415 and the council said we're entitled to a second permit. When I try to get one for his car it says "
          "vehicle not found. What am I doing wrong?",
          "company car just delivered, need the parking permit, R-12009, DY26LMA",
      ]),

    F("solar-firmware-night-window", "solar-fleet", SOLAR_TOOLS, "solar-firmware-bridge-release", "operation",
      "Firmware can't be flashed while an inverter is producing; queue the push with schedule_job for the night "
      "window (after sunset, site local time) instead of pushing now or rebooting the unit.",
      ["schedule_job", "night", "after sunset"],
      [
          TX("fail-fix-reasoned", "Push firmware 3.2.1 to inverter INV-0192 at the Harlow site", "success",
             U("Push firmware 3.2.1 to inverter INV-0192 at the Harlow site."),
             OK("get_inverter", {"inverter_id": "INV-0192"}, {"fw": "3.1.0", "state": "producing", "output_kw": 41.2, "local_time": "13:10"}),
             E("push_firmware", {"inverter_id": "INV-0192", "image": "3.2.1"}, SOLAR_ERR + " (state=producing)"),
             R("It refuses to flash while exporting power. Queue it for the night window instead of now."),
             OK("schedule_job", {"inverter_id": "INV-0192", "action": "push_firmware", "image": "3.2.1",
                                 "at": "2026-05-14T22:00:00+01:00"}, {"job_id": "J-5120", "status": "scheduled"}),
             S("INV-0192.pending_update", "3.2.1 @ 22:00")),
          TX("user-corrects", "Roll firmware 3.2.1 to INV-0301..0304 at Thornbury", "success",
             U("Roll 3.2.1 out to INV-0301 to INV-0304 at Thornbury."),
             E("push_firmware", {"inverter_id": "INV-0301", "image": "3.2.1"}, SOLAR_ERR),
             R("Maybe the unit is in a stuck state; a reboot should clear it."),
             OK("reboot_inverter", {"inverter_id": "INV-0301"}, {"rebooted": True, "output_kw_after": 37.9}),
             E("push_firmware", {"inverter_id": "INV-0301", "image": "3.2.1"}, SOLAR_ERR),
             U("Stop rebooting production units, it's midday and they're feeding the grid. Queue it for after dark."),
             OK("schedule_job", {"inverter_ids": ["INV-0301", "INV-0302", "INV-0303", "INV-0304"], "action": "push_firmware",
                                 "image": "3.2.1", "at": "2026-06-02T22:30:00+01:00"}, {"job_id": "J-5188", "status": "scheduled"}),
             FB("Good, that's how we do it.")),
      ],
      [
          "flash 3.3.0 on INV-0415, it's 14:00 and sunny",
          "UPDATE_REJECTED: preconditions not met. INV-0520 is doing 38 kW right now, firmware 3.1.2 -> 3.3.0",
          "We have a security patch (3.2.2) that must be on all twelve inverters at the Marlow farm this week. They're "
          "all on 3.1.x. I tried pushing from the portal at lunchtime and every one came back with preconditions not "
          "met. Can you get this done without losing generation?",
          "update firmware on producing inverter INV-0744",
      ]),
    F("solar-firmware-bridge-release", "solar-fleet", SOLAR_TOOLS, "solar-firmware-night-window", "operation",
      "Inverters still on 1.x firmware can't take a 3.x image directly: push the bridge release 2.0.4 first, reboot, "
      "then the target version.",
      ["bridge", "2.0.4", "intermediate"],
      [
          TX("wrong-alt+blind-retries", "Update INV-0877 at Dunmore to firmware 3.2.1", "failure",
             U("Update INV-0877 at Dunmore to 3.2.1."),
             OK("get_inverter", {"inverter_id": "INV-0877"}, {"fw": "1.9.3", "state": "standby", "local_time": "23:40"}),
             E("push_firmware", {"inverter_id": "INV-0877", "image": "3.2.1"}, SOLAR_ERR),
             R("Probably not idle enough yet; schedule it for the small hours."),
             OK("schedule_job", {"inverter_id": "INV-0877", "action": "push_firmware", "image": "3.2.1",
                                 "at": "2026-05-15T02:00:00+01:00"}, {"job_id": "J-5521", "status": "scheduled"}),
             S("job.J-5521", "failed: UPDATE_REJECTED: preconditions not met"),
             E("push_firmware", {"inverter_id": "INV-0877", "image": "3.2.1"}, SOLAR_ERR),
             FB("It was already night, timing was never the problem. A 1.x unit can't jump straight to 3.x: it needs "
                "the 2.0.4 bridge release first.", "negative")),
          TX("explain-after", "Bring INV-0650 to the latest firmware", "success",
             U("Bring INV-0650 to the latest firmware."),
             OK("get_inverter", {"inverter_id": "INV-0650"}, {"fw": "1.8.0", "state": "standby"}),
             E("push_firmware", {"inverter_id": "INV-0650", "image": "3.2.1"}, SOLAR_ERR),
             OK("push_firmware", {"inverter_id": "INV-0650", "image": "2.0.4"}, {"installed": "2.0.4"}),
             OK("reboot_inverter", {"inverter_id": "INV-0650"}, {"rebooted": True}),
             OK("push_firmware", {"inverter_id": "INV-0650", "image": "3.2.1"}, {"installed": "3.2.1"}),
             R("Done. Units on 1.x have to go through the 2.0.4 bridge release before they accept any 3.x image."),
             FB("Nice.")),
      ],
      [
          "INV-0033 still runs 1.7.2, bring it to 3.3.0",
          "UPDATE_REJECTED preconditions not met at 01:00, inverter idle, current firmware 1.9.0",
          "We took over an old site (Pencombe) whose inverters haven't been touched since commissioning in 2019, "
          "firmware 1.6-something. Head office wants them all on the current 3.3.0 for the new monitoring contract. "
          "The portal rejects every push even at night. Any idea?",
          "legacy inverters on 1.x won't take the 3.x image",
      ]),

    F("dental-lab-shade-code", "dental-lab", ["get_case", "upload_scan", "submit_case"], None, "operation",
      "The shade field takes a code from a named shade guide: VITA classical (A1-D4, e.g. 'A2') by default, or a "
      "3D-Master code with shade_guide='3d_master'; descriptive words ('natural white') are rejected. Ask the dentist "
      "for the code if only a description was given.",
      ["vita classical", "shade_guide", "shade code"],
      [
          TX("fail-fix-reasoned+asks-user", "Send the zirconia crown case for tooth 14, patient DL-3302, shade 'natural white'", "success",
             U("Send the case for a zirconia crown on 14, patient DL-3302, shade 'natural white'. Scan is in the inbox."),
             OK("upload_scan", {"patient": "DL-3302", "file": "DL-3302_UR4.stl"}, {"scan_id": "SC-7781"}),
             E("submit_case", {"patient": "DL-3302", "scan_id": "SC-7781", "tooth": 14, "material": "zirconia",
                               "shade": "natural white"}, "CASE_INVALID: field 'shade' not recognised"),
             R("The lab wants a code from a shade guide (VITA classical by default), not a description. Asking the "
               "dentist which VITA shade she matched."),
             U("It's A2."),
             OK("submit_case", {"patient": "DL-3302", "scan_id": "SC-7781", "tooth": 14, "material": "zirconia", "shade": "A2"},
                {"case_id": "CS-20415", "due": "2026-03-18"})),
          TX("rule-first", "Bridge 24-26 for patient DL-3417, shade matched as 2M2", "success",
             U("Bridge 24 to 26 for patient DL-3417, the shade was matched as 2M2."),
             R("2M2 is a VITA 3D-Master code, not a VITA classical one, so the case needs shade_guide set to 3d_master "
               "or the lab will reject the shade."),
             OK("get_case", {"patient": "DL-3417"}, {"open_cases": 0, "scans": ["SC-7802"]}),
             OK("submit_case", {"patient": "DL-3417", "scan_id": "SC-7802", "teeth": [24, 25, 26], "type": "bridge",
                                "shade": "2M2", "shade_guide": "3d_master"}, {"case_id": "CS-20431"})),
      ],
      [
          "submit crown case for DL-4001, shade 'slightly yellowish like the neighbours'",
          "CASE_INVALID: field 'shade' not recognised",
          "Hi, I'm the practice manager at Elm Road Dental. Dr. Sato wants two veneers on 11 and 21 for patient "
          "DL-4188 and wrote 'bright bleach white, patient insists' on the lab slip. Whenever I send it the lab portal "
          "bounces it. Can you submit it for me?",
          "lab rejects our onlay case, shade written as 'medium'",
      ]),
    F("mealkit-ask-which-plan", "meal-kit-subscriptions", ["get_account", "skip_delivery", "pause_plan"], None, "operation",
      "An account can hold several plans (e.g. a family box and a lunch box); when the request doesn't say which, "
      "list the plans and ask the user which plan to skip or pause before acting.",
      ["which plan", "ask the user", "ask which"],
      [
          TX("wrong-alt", "Skip next week's delivery on account MK-88120", "failure",
             U("Skip next week's delivery, account MK-88120."),
             OK("get_account", {"account": "MK-88120"}, {"plans": [{"id": "PL-1", "name": "Family box, 4 people"},
                                                                  {"id": "PL-2", "name": "Lunch box, 5 days"}]}),
             OK("skip_delivery", {"account": "MK-88120", "plan_id": "PL-1", "week": "2026-W19"}, {"skipped": True}),
             FB("I meant the lunch box! We have guests next week and needed the family box. When there are two plans, "
                "ask which one.", "negative")),
          TX("asks-user", "Pause deliveries for July on account MK-90314", "success",
             U("Pause deliveries for July, account MK-90314."),
             OK("get_account", {"account": "MK-90314"}, {"plans": [{"id": "PL-7", "name": "Veggie box, 2 people"},
                                                                  {"id": "PL-9", "name": "Fruit add-on"}]}),
             R("Two plans on this account and the request doesn't say which. Asking the user which plan to pause."),
             U("Both, we're away the whole month."),
             OK("pause_plan", {"account": "MK-90314", "plan_id": "PL-7", "from": "2026-07-01", "to": "2026-07-31"}, {"paused": True}),
             OK("pause_plan", {"account": "MK-90314", "plan_id": "PL-9", "from": "2026-07-01", "to": "2026-07-31"}, {"paused": True}),
             FB("Thanks!")),
      ],
      [
          "skip delivery for week 22, account MK-40515",
          "pause my boxes for June please, MK-51290",
          "We're going camping in the Highlands from the 3rd to the 12th, so please don't send anything while we're "
          "away. My account number is MK-66031. Last time someone did this for me only half of it got stopped.",
          "customer wants to skip next Thursday's box",
      ]),
]
