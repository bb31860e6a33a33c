# placeholder until written
